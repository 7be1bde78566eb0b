package handler_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/money"
)

// What a full batch costs (docs/money.md, "What the alarm function costs"): 100 records,
// 25 two-step turns of three users on one day (4 records a turn), are
// one BatchGetItem and one TransactWriteItems per user-day; their
// redelivery is the read alone; alarms add one PutEvents per ten and an
// UpdateItem each.
func TestCallsPerBatch(t *testing.T) {
	s := newStream(t)
	var batch []events.DynamoDBEventRecord
	users := []string{"ua", "ub", "uc"}
	for i := range 25 {
		u := users[i%3]
		batch = append(batch, s.turn(turnSpec{run: fmt.Sprintf("run_%s_%02d", u, i), user: u, engine: "native",
			admitted: time.Date(2026, 12, 2, 9, i, 0, 0, time.UTC), steps: []money.Micros{30_000, 50_000}})...)
	}
	if len(batch) != 100 {
		t.Fatalf("%d records", len(batch))
	}
	cases := []struct {
		name      string
		threshold string
		want      map[string]int
		events    int
	}{
		{"first delivery", "2.00", map[string]int{"BatchGetItem": 1, "TransactWriteItems": 3}, 0},
		{"first delivery, three alarms", "0.50", map[string]int{"BatchGetItem": 1, "TransactWriteItems": 3, "UpdateItem": 3}, 3},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			hs := newHarness(t, map[string]string{"DAILY_SPEND_ALARM_USD": c.threshold})
			if f := failures(hs.handle(batch)); len(f) != 0 {
				t.Fatal(f)
			}
			if calls := hs.calls.take(); !maps.Equal(calls, c.want) {
				t.Errorf("calls %v, want %v", calls, c.want)
			}
			if n := len(hs.bus.Events()); n != c.events || (n > 0 && hs.bus.Requests() != 1) {
				t.Errorf("%d events in %d PutEvents calls, want %d in 1", n, hs.bus.Requests(), c.events)
			}
			for i, u := range users {
				turns := []int64{9, 8, 8}[i]
				if got := hs.usage(u, day1).cost; got != turns*80_000 {
					t.Errorf("%s: %d, want %d", u, got, turns*80_000)
				}
			}
			hs.handle(batch)
			if calls := hs.calls.take(); !maps.Equal(calls, map[string]int{"BatchGetItem": 1}) {
				t.Errorf("redelivery: calls %v, want one BatchGetItem", calls)
			}
		})
	}
}
