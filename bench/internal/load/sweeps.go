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
	"github.com/commonly/runtime/shared/sandbox"
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
	checked         int             // sandboxes looked at after the sweeps
	late            []string        // sandboxes alive past the bound, with where
	lateSeen        map[string]bool // each reported once
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

// check runs after a sweep that started at now (the stack's clock): a
// sandbox past its lifetime, the grace and one more sweep then is late,
// however long the sweep itself took.
func (s *sweeps) check(ctx context.Context, st *stack, now time.Time) {
	late := map[string]string{}
	n := 0
	for _, sb := range st.e2b.Sandboxes() {
		n++
		if now.Sub(sb.StartedAt) > s.slack() {
			late[sb.ID] = fmt.Sprintf("e2b %s started %s ago", sb.ID, now.Sub(sb.StartedAt).Round(time.Second))
		}
	}
	// The live index's sort key is the record's expiry (its lifetime
	// after creation): past it by more than the grace and one sweep is late.
	bound := tablekeys.LiveSort(now.Add(-reaper.DefaultGrace - s.interval))
	for shard := range st.Turn.Store.IndexShards() {
		out, err := st.plain.Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(turnstack.Tables.State), IndexName: aws.String(tablekeys.LiveIndex),
			KeyConditionExpression: aws.String("#pk = :live AND #sk < :bound"),
			// The embedded DynamoDB's index keeps the entry of a record whose
			// index keys were removed (DynamoDB drops it): the reaper's own
			// query filters on the status too (store.ExpiredSandboxes).
			FilterExpression:         aws.String("#st = :running"),
			ExpressionAttributeNames: map[string]string{"#pk": tablekeys.GSI1PK, "#sk": tablekeys.GSI1SK, "#st": "status"},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":live": &types.AttributeValueMemberS{Value: tablekeys.LivePartition(shard)}, ":bound": &types.AttributeValueMemberS{Value: bound},
				":running": &types.AttributeValueMemberS{Value: sandbox.StatusRunning},
			},
		})
		if err != nil {
			continue
		}
		for _, item := range out.Items {
			id, _ := item[tablekeys.SandboxID].(*types.AttributeValueMemberS)
			exp, _ := item[tablekeys.GSI1SK].(*types.AttributeValueMemberS)
			if id != nil && exp != nil {
				late[id.Value] = fmt.Sprintf("record %s expired at %s, now %s", id.Value, exp.Value, tablekeys.LiveSort(now))
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checked += n
	if s.lateSeen == nil {
		s.lateSeen = map[string]bool{}
	}
	for id, why := range late {
		if !s.lateSeen[id] {
			s.lateSeen[id] = true
			s.late = append(s.late, why)
		}
	}
}
