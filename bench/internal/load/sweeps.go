package load

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/bench/internal/turnstack"
	reaperhandler "github.com/commonly/runtime/functions/reaper/handler"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/tablekeys"
)

// sweeps keeps what the reaper's sweeps did, and the sandboxes found
// alive past their lifetime plus the reaper's grace plus one sweep,
// looked for after every sweep: in E2B (the fake's live sandboxes) and
// on the state table's live index.
type sweeps struct {
	lifetime time.Duration
	interval time.Duration // one sweep's period in the stack's clock

	mu              sync.Mutex
	n, failed       int
	killed, gone    int
	runsInterrupted int
	runsRefunded    int
	checked         int      // sandboxes looked at after the sweeps
	late            []string // sandboxes alive past the bound, with where
}

func (s *sweeps) record(res reaperhandler.Result, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if err != nil {
		s.failed++
		return
	}
	s.killed += res.Killed
	s.gone += res.AlreadyGone
	s.runsInterrupted += res.RunsInterrupted
	s.runsRefunded += res.RunsRefunded
}

// bound is the latest start (E2B) of a sandbox that may still be alive
// at now: its lifetime, the reaper's grace and one sweep.
func (s *sweeps) slack() time.Duration { return s.lifetime + reaper.DefaultGrace + s.interval }

func (s *sweeps) check(ctx context.Context, st *stack) {
	now := st.clock.Now()
	var late []string
	n := 0
	for _, sb := range st.e2b.Sandboxes() {
		n++
		if now.Sub(sb.StartedAt) > s.slack() {
			late = append(late, fmt.Sprintf("e2b %s started %s ago", sb.ID, now.Sub(sb.StartedAt).Round(time.Second)))
		}
	}
	// The live index's sort key is the record's expiry (its lifetime
	// after creation): past it by more than the grace and one sweep is late.
	bound := now.Add(-reaper.DefaultGrace - s.interval).UTC().Format(time.RFC3339Nano)
	out, err := st.plain.Query(ctx, &dynamodb.QueryInput{
		TableName: aws.String(turnstack.Tables.State), IndexName: aws.String(tablekeys.LiveIndex),
		KeyConditionExpression:    aws.String("#pk = :live AND #sk < :bound"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.GSI1PK, "#sk": tablekeys.GSI1SK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":live": &types.AttributeValueMemberS{Value: tablekeys.LiveValue}, ":bound": &types.AttributeValueMemberS{Value: bound}},
	})
	if err == nil {
		for _, item := range out.Items {
			id, _ := item[tablekeys.SandboxID].(*types.AttributeValueMemberS)
			exp, _ := item[tablekeys.GSI1SK].(*types.AttributeValueMemberS)
			if id != nil && exp != nil {
				late = append(late, fmt.Sprintf("record %s expired at %s", id.Value, exp.Value))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked += n
	s.late = append(s.late, late...)
}
