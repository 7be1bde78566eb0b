package load

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// dayKey is a user's UTC day.
type dayKey struct{ user, day string }

// usageItem is a user-day's usage item: the turns counted against the
// ceiling, the cost the ledger added to it, and the spend cap's
// reservations of the turns in flight, the charges of the finished ones
// and their sum (store/reservation.go).
type usageItem struct {
	turns                     int64
	cost                      money.Micros
	reserved, committed, held money.Micros
}

// modelCall is one request the scripted model received: the planned
// turn it is of, its step (the model answers it carries) and what the
// model answered.
type modelCall struct {
	turn   string
	step   int
	status int
}

// snapshot is everything the run wrote that the invariants read, read
// back after it with an uncounted client.
type snapshot struct {
	runs   []runs.Run
	usage  map[dayKey]usageItem
	ledger map[dayKey]money.Micros
	alarms []ledger.Alarm
	models []modelCall
}

func readBack(ctx context.Context, st *stack) (*snapshot, error) {
	s := &snapshot{usage: map[dayKey]usageItem{}, ledger: map[dayKey]money.Micros{}}
	err := scan(ctx, st.plain, turnstack.Tables.Runs, func(item map[string]types.AttributeValue) error {
		var r runs.Run
		if err := attributevalue.UnmarshalMap(item, &r); err != nil {
			return err
		}
		s.runs = append(s.runs, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read runs: %w", err)
	}
	err = scan(ctx, st.plain, turnstack.Tables.State, func(item map[string]types.AttributeValue) error {
		var it struct {
			PK         string       `dynamodbav:"pk"`
			SK         string       `dynamodbav:"sk"`
			Turns      int64        `dynamodbav:"turns"`
			CostMicros money.Micros `dynamodbav:"costMicros"`
			Reserved   money.Micros `dynamodbav:"reservedMicros"`
			Committed  money.Micros `dynamodbav:"capCommittedMicros"`
			Held       money.Micros `dynamodbav:"capHeldMicros"`
		}
		if err := attributevalue.UnmarshalMap(item, &it); err != nil {
			return err
		}
		user, ok := strings.CutPrefix(it.PK, "USER#")
		if !ok {
			return nil
		}
		switch {
		case strings.HasPrefix(it.SK, "DAY#"):
			s.usage[dayKey{user, strings.TrimPrefix(it.SK, "DAY#")}] = usageItem{turns: it.Turns, cost: it.CostMicros, reserved: it.Reserved, committed: it.Committed, held: it.Held}
		case strings.HasPrefix(it.SK, "LEDGER#"):
			s.ledger[dayKey{user, strings.TrimPrefix(it.SK, "LEDGER#")}] = it.CostMicros
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the state table: %w", err)
	}
	s.models = modelCalls(st.model.Requests())
	for _, ev := range st.Bus.Events() {
		if ev.DetailType != ledger.AlarmDetailType {
			continue
		}
		var a ledger.Alarm
		if err := json.Unmarshal(ev.Detail, &a); err != nil {
			return nil, fmt.Errorf("alarm event: %w", err)
		}
		s.alarms = append(s.alarms, a)
	}
	return s, nil
}

// modelCalls are the model's requests of the planned turns.
func modelCalls(reqs []llmtest.Recorded) []modelCall {
	var out []modelCall
	for _, r := range reqs {
		if d, _, step := conversation(r.Body); d.Kind != "" {
			out = append(out, modelCall{turn: d.Turn, step: step, status: r.Status})
		}
	}
	return out
}

func scan(ctx context.Context, db *dynamodb.Client, table string, each func(map[string]types.AttributeValue) error) error {
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return err
		}
		for _, item := range page.Items {
			if err := each(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// openRuns counts the runs on the open index, every shard.
func openRuns(ctx context.Context, db *dynamodb.Client, shards int) (int, error) {
	n := 0
	for shard := range shards {
		p := dynamodb.NewQueryPaginator(db, &dynamodb.QueryInput{
			TableName: aws.String(turnstack.Tables.Runs), IndexName: aws.String(tablekeys.OpenIndex), Select: types.SelectCount,
			KeyConditionExpression:    aws.String("#pk = :open"),
			ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":open": &types.AttributeValueMemberS{Value: tablekeys.OpenPartition(shard)}},
		})
		for p.HasMorePages() {
			page, err := p.NextPage(ctx)
			if err != nil {
				return 0, err
			}
			n += int(page.Count)
		}
	}
	return n, nil
}

// countRuns counts the runs table's items.
func countRuns(ctx context.Context, db *dynamodb.Client) (int, error) {
	n := 0
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(turnstack.Tables.Runs), Select: types.SelectCount})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, err
		}
		n += int(page.Count)
	}
	return n, nil
}
