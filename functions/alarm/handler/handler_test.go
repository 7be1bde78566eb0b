package handler_test

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/ledger"
)

const (
	alice1Final = 1_400_000 // native-turn.json: $0.60 after the first step, $1.40 at the end
	alice2Final = 700_000   // second-turn.json
	alice1Fixed = 1_150_000 // cost-correction.json
	bob1Final   = 350_000   // fallback-turn.json
	graceEach   = 900_000   // crossing-in-batch.json, three turns
	threshold   = 2_000_000 // the default DAILY_SPEND_ALARM_USD
	heidiFinal  = 400_000   // midnight.json
	judyFinal   = 100_000   // malformed.json's good turn
)

func TestRedeliveryCountsOnce(t *testing.T) {
	hs := newHarness(t, nil)
	for i := range 3 {
		if f := failures(hs.invoke("native-turn.json")); len(f) != 0 {
			t.Fatalf("delivery %d: failures %v", i+1, f)
		}
		calls := hs.calls.take()
		if u := hs.usage("alice", day1); u.cost != alice1Final {
			t.Fatalf("delivery %d: alice's day is %d, want %d", i+1, u.cost, alice1Final)
		}
		// The first delivery writes the day once; a redelivery only reads.
		want := map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1}
		if i > 0 {
			want = map[string]int{"BatchGetItem": 1}
		}
		if !maps.Equal(calls, want) {
			t.Errorf("delivery %d: calls %v, want %v", i+1, calls, want)
		}
	}
	// A retry of the batch's tail (Lambda's retry after a partial failure).
	tail := loadRecords(t, "native-turn.json")[2:]
	if f := failures(hs.handle(tail)); len(f) != 0 || hs.usage("alice", day1).cost != alice1Final {
		t.Fatalf("tail retry: %v, %d", f, hs.usage("alice", day1).cost)
	}
	if len(hs.bus.Events()) != 0 {
		t.Fatalf("$1.40 raised %d alarms", len(hs.bus.Events()))
	}
}

func TestCostCorrectionAddsTheDifference(t *testing.T) {
	hs := newHarness(t, nil)
	hs.invoke("native-turn.json", "second-turn.json")
	if u := hs.usage("alice", day1); u.cost != alice1Final+alice2Final {
		t.Fatalf("before: %d", u.cost)
	}
	for range 2 { // the correction, then its redelivery
		if f := failures(hs.invoke("cost-correction.json")); len(f) != 0 {
			t.Fatalf("failures %v", f)
		}
		if u := hs.usage("alice", day1); u.cost != alice1Fixed+alice2Final {
			t.Fatalf("after the correction: %d, want %d (−%d)", u.cost, alice1Fixed+alice2Final, alice1Final-alice1Fixed)
		}
	}
	// The whole shard again, from its start: nothing changes.
	hs.invoke("native-turn.json", "second-turn.json", "cost-correction.json")
	if u := hs.usage("alice", day1); u.cost != alice1Fixed+alice2Final {
		t.Fatalf("after a replay of the shard: %d", u.cost)
	}
	// $2.10 raised the alarm once; dropping to $1.85 does not raise another.
	if n := len(hs.bus.Events()); n != 1 {
		t.Fatalf("%d alarms, want 1", n)
	}
	if !strings.Contains(hs.metrics.String(), `"CostCountedMicros":-250000`) {
		t.Errorf("no negative cost counted in the metrics:\n%s", hs.metrics.String())
	}
}

func TestTwoUsersAndTwoDaysInOneBatch(t *testing.T) {
	hs := newHarness(t, nil)
	if f := failures(hs.invoke("two-users-two-days.json")); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	want := map[[2]string]int64{
		{"erin", day1}: 100_000, {"erin", day2}: 400_000,
		{"frank", day1}: 200_000, {"frank", day2}: 500_000,
	}
	for k, cost := range want {
		if u := hs.usage(k[0], k[1]); u.cost != cost {
			t.Errorf("%s on %s: %d, want %d", k[0], k[1], u.cost, cost)
		}
	}
	// 13 records over 4 user-days: one read, one write per user-day.
	if calls := hs.calls.take(); !maps.Equal(calls, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 4}) {
		t.Errorf("calls %v", calls)
	}
}

func TestThresholdCrossedInsideOneBatch(t *testing.T) {
	hs := newHarness(t, nil)
	hs.admit("grace", day1, 3)
	hs.now = time.Date(2026, 12, 2, 14, 21, 0, 0, time.UTC)
	if f := failures(hs.invoke("crossing-in-batch.json")); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	evs := hs.bus.Events()
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	ev := evs[0]
	if ev.Source != "commonly.hosted-runtime" || ev.DetailType != "SpendAlarmRaised" || ev.Bus != "commonly-alarms" || !ev.Time.Equal(hs.now) {
		t.Errorf("event envelope %+v", ev)
	}
	var detail map[string]any
	if err := json.Unmarshal(ev.Detail, &detail); err != nil {
		t.Fatal(err)
	}
	id := ledger.AlarmID(ledger.DayKey{UserID: "grace", Day: day1}, threshold)
	want := map[string]any{"userId": "grace", "day": day1, "costMicros": float64(3 * graceEach), "costUSD": "2.700000",
		"thresholdMicros": float64(threshold), "turns": float64(3), "alarmId": id}
	if !maps.Equal(detail, want) {
		t.Errorf("detail %v\nwant   %v", detail, want)
	}
	if u := hs.usage("grace", day1); u.alarmID != id || u.cost != 3*graceEach || u.turns != 3 {
		t.Errorf("usage %+v", u)
	}
	// One read, one write, one PutEvents (not a DynamoDB call), the marker.
	if calls := hs.calls.take(); !maps.Equal(calls, map[string]int{"BatchGetItem": 1, "TransactWriteItems": 1, "UpdateItem": 1}) {
		t.Errorf("calls %v", calls)
	}
	hs.invoke("crossing-in-batch.json")
	if n := len(hs.bus.Events()); n != 1 {
		t.Fatalf("redelivery raised again: %d events", n)
	}
}

func TestThresholdCrossedAcrossBatches(t *testing.T) {
	hs := newHarness(t, nil)
	hs.invoke("native-turn.json")
	if n := len(hs.bus.Events()); n != 0 {
		t.Fatalf("$1.40: %d events", n)
	}
	hs.invoke("second-turn.json")
	evs := hs.bus.Events()
	if len(evs) != 1 || !strings.Contains(string(evs[0].Detail), `"costUSD":"2.100000"`) {
		t.Fatalf("events %+v", evs)
	}
	// A lower threshold is another alarm (another alarmId); the same
	// threshold again is not.
	low := newHarness(t, map[string]string{"DAILY_SPEND_ALARM_USD": "1.00"})
	low.invoke("native-turn.json", "second-turn.json")
	if evs := low.bus.Events(); len(evs) != 1 || !strings.Contains(string(evs[0].Detail), `"thresholdMicros":1000000`) || !strings.Contains(string(evs[0].Detail), `"costMicros":2100000`) {
		t.Fatalf("at $1: %+v", evs)
	}
}

// A run's cost counts on the day recorded on the run, its admission's,
// however late its records arrive.
func TestUTCMidnightBoundary(t *testing.T) {
	hs := newHarness(t, nil)
	hs.now = time.Date(2026, 12, 3, 0, 0, 5, 0, time.UTC)
	recs := loadRecords(t, "midnight.json")
	if last := recs[len(recs)-1].Change.ApproximateCreationDateTime.UTC(); last.Format("2006-01-02") != day2 {
		t.Fatalf("the file's last record is from %s, want after midnight", last)
	}
	if f := failures(hs.invoke("midnight.json")); len(f) != 0 {
		t.Fatalf("failures %v", f)
	}
	if u := hs.usage("heidi", day1); u.cost != heidiFinal {
		t.Errorf("heidi on %s: %d, want %d", day1, u.cost, heidiFinal)
	}
	if u := hs.usage("heidi", day2); u.exists {
		t.Errorf("heidi has a usage item on %s: %+v", day2, u)
	}
}

func TestPutEventsFailingThenSucceedingRaisesOneEvent(t *testing.T) {
	recs := loadRecords(t, "crossing-in-batch.json")
	crossing := recs[len(recs)-1].Change.SequenceNumber // the third turn's final write
	cases := map[string]func(hs *harness){
		"entry refused (FailedEntryCount 1)":    func(hs *harness) { hs.bus.FailEntries(1) },
		"call failed (after the SDK's retries)": func(hs *harness) { hs.bus.FailRequests(3) },
	}
	for name, breakBus := range cases {
		t.Run(name, func(t *testing.T) {
			hs := newHarness(t, nil)
			breakBus(hs)
			resp := hs.handle(recs)
			if f := failures(resp); !slices.Equal(f, []string{crossing}) {
				t.Fatalf("failures %v, want the crossing record %s", f, crossing)
			}
			// The cost is counted; the alarm is not marked.
			if u := hs.usage("grace", day1); u.cost != 3*graceEach || u.alarmID != "" {
				t.Fatalf("after the failure: %+v", u)
			}
			// Lambda retries from the reported record.
			var retry = recs
			for i, r := range recs {
				if r.Change.SequenceNumber == crossing {
					retry = recs[i:]
				}
			}
			if f := failures(hs.handle(retry)); len(f) != 0 {
				t.Fatalf("retry failures %v", f)
			}
			hs.handle(recs)
			if evs := hs.bus.Events(); len(evs) != 1 {
				t.Fatalf("%d events, want exactly 1", len(evs))
			}
			if u := hs.usage("grace", day1); u.cost != 3*graceEach || u.alarmID == "" {
				t.Fatalf("after the retry: %+v", u)
			}
		})
	}
}

func TestMalformedRecordIsSkipped(t *testing.T) {
	hs := newHarness(t, nil)
	resp := hs.invoke("malformed.json")
	if f := failures(resp); len(f) != 0 {
		t.Fatalf("a malformed record blocked the shard: %v", f)
	}
	if u := hs.usage("judy", day1); u.cost != judyFinal {
		t.Errorf("judy: %d", u.cost)
	}
	if u := hs.usage("ivan", day1); u.exists {
		t.Errorf("ivan was counted: %+v", u)
	}
	logs := hs.logs.String()
	if !strings.Contains(logs, `"msg":"stream record skipped"`) || !strings.Contains(logs, `"runId":"run_ivan1"`) || !strings.Contains(logs, "no valid userId") {
		t.Errorf("no error log for the skipped record:\n%s", logs)
	}
	var emf map[string]any
	if err := json.Unmarshal([]byte(strings.TrimSpace(hs.metrics.String())), &emf); err != nil {
		t.Fatal(err)
	}
	if emf["RecordsSkipped"] != float64(1) || emf["RecordsProcessed"] != float64(3) || emf["RecordsFailed"] != float64(0) || emf["CostCountedMicros"] != float64(judyFinal) {
		t.Errorf("metrics %v", emf)
	}
}

func TestFallbackEngineRunsCount(t *testing.T) {
	hs := newHarness(t, nil)
	hs.invoke("fallback-turn.json")
	if u := hs.usage("bob", day1); u.cost != bob1Final {
		t.Errorf("bob: %d, want %d", u.cost, bob1Final)
	}
}

func TestTTLDeletionChangesNothing(t *testing.T) {
	hs := newHarness(t, nil)
	hs.invoke("native-turn.json")
	hs.calls.take()
	if f := failures(hs.invoke("ttl-remove.json")); len(f) != 0 {
		t.Fatal(f)
	}
	if u := hs.usage("alice", day1); u.cost != alice1Final {
		t.Errorf("alice after her run expired: %d", u.cost)
	}
	if calls := hs.calls.take(); len(calls) != 0 {
		t.Errorf("a REMOVE made calls %v", calls)
	}
}

// One log line and one EMF event per batch, with counts and no ids.
func TestOneLogLineAndMetricsPerBatch(t *testing.T) {
	hs := newHarness(t, nil)
	hs.invoke("two-users-two-days.json", "malformed.json")
	var batch []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(hs.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		if m["msg"] == "stream batch" {
			batch = append(batch, m)
		}
	}
	if len(batch) != 1 {
		t.Fatalf("%d batch lines", len(batch))
	}
	want := map[string]float64{"records": 17, "processed": 16, "skipped": 1, "failed": 0, "userDays": 5, "writes": 5, "alarms": 0,
		"costMicros": 100_000 + 400_000 + 200_000 + 500_000 + judyFinal}
	for k, v := range want {
		if batch[0][k] != v {
			t.Errorf("%s = %v, want %v", k, batch[0][k], v)
		}
	}
	lines := strings.Split(strings.TrimSpace(hs.metrics.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d EMF lines", len(lines))
	}
	var emf struct {
		AWS struct {
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name string }
			}
		} `json:"_aws"`
	}
	if err := json.Unmarshal([]byte(lines[0]), &emf); err != nil {
		t.Fatal(err)
	}
	d := emf.AWS.CloudWatchMetrics[0]
	var names []string
	for _, m := range d.Metrics {
		names = append(names, m.Name)
	}
	if d.Namespace != "Commonly/HostedRuntime" || len(d.Dimensions) != 1 || len(d.Dimensions[0]) != 0 ||
		!slices.Equal(names, []string{"RecordsProcessed", "RecordsSkipped", "RecordsFailed", "CostCountedMicros", "SpendAlarmsRaised"}) {
		t.Errorf("EMF %+v", d)
	}
}
