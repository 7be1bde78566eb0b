package scale

import (
	"math"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/commonly/runtime/infra/lambdamem"
	"github.com/commonly/runtime/shared/tablekeys"
)

func load(t *testing.T) Model {
	t.Helper()
	m, err := Load(".", "../../cdk.json", tablekeys.DefaultIndexShards)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// docs/scale.md holds exactly what the model prints: `make scale`
// rewrites it, and this fails until it is rerun after a change of the
// inputs, the measured figures, cdk.json or the model.
func TestDocumentIsTheModelsOutput(t *testing.T) {
	m := load(t)
	doc, err := os.ReadFile("../../docs/scale.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := Splice(string(doc), m.Render())
	if err != nil {
		t.Fatal(err)
	}
	if string(doc) != want {
		t.Error("docs/scale.md differs from the model's output: run make scale")
	}
}

// The model's arithmetic at one size, by hand from the inputs: the load
// scales with the users, the cost a turn does not, and the busiest key
// is an open-index shard's share.
func TestComputeFollowsTheInputs(t *testing.T) {
	m := load(t)
	small, large := m.Compute(1e5), m.Compute(1e7)
	perUser := 0.0
	for _, p := range m.In.Plans {
		perUser += p.Share * p.TurnsPerUserDay
	}
	if want := 1e5 * perUser / 86400 * m.In.PeakFactor; math.Abs(small.PeakTurns-want) > 1e-9 {
		t.Errorf("peak turns %g, want %g", small.PeakTurns, want)
	}
	if r := large.PeakTurns / small.PeakTurns; math.Abs(r-100) > 1e-9 {
		t.Errorf("100× the users made %g× the turns", r)
	}
	if math.Abs(large.CostPerTurn-small.CostPerTurn) > 1e-7*small.CostPerTurn+1e-12 && large.CostPerTurn > small.CostPerTurn {
		t.Errorf("a turn costs more at 10 M (%g) than at 100 k (%g)", large.CostPerTurn, small.CostPerTurn)
	}
	open := large.IndexWrites["runs "+tablekeys.OpenIndex]
	if want := large.PeakTurns * m.Measured.WriteUnitsPerTurn["commonly-runs"]["index "+tablekeys.OpenIndex]; math.Abs(open-want) > 1e-6 {
		t.Errorf("open index %g write units/s, want %g", open, want)
	}
	// An index given in the inputs (the userRuns index) counts its
	// writes into the runs table's, once.
	user := m.In.IndexWrites["runs "+tablekeys.UserRunsIndex].PerTurn
	if user != 2 || math.Abs(large.IndexWrites["runs "+tablekeys.UserRunsIndex]-large.PeakTurns*user) > 1e-6 {
		t.Errorf("userRuns index %g write units/s from %g a turn", large.IndexWrites["runs "+tablekeys.UserRunsIndex], user)
	}
	runs := 0.0
	for _, v := range m.Measured.WriteUnitsPerTurn["commonly-runs"] {
		runs += v
	}
	if want := large.PeakTurns * (runs + user - m.Measured.WriteUnitsPerTurn["commonly-runs"]["index "+tablekeys.UserRunsIndex]); math.Abs(large.RunsWrites-want) > 1e-6 {
		t.Errorf("runs table %g write units/s, want %g", large.RunsWrites, want)
	}
	if large.BusiestWrites < open/float64(m.IndexShards)-1e-9 {
		t.Errorf("busiest key %g below an open shard's %g", large.BusiestWrites, open/float64(m.IndexShards))
	}
	sum := 0.0
	for _, k := range costParts {
		if large.Cost[k] <= 0 {
			t.Errorf("cost of %s is %g: never silently zero", k, large.Cost[k])
		}
		sum += large.Cost[k]
	}
	if math.Abs(sum-large.CostPerTurn) > 1e-12 {
		t.Errorf("parts %g, total %g", sum, large.CostPerTurn)
	}
	// At 10 million users the default shards keep the busiest key under a
	// partition's limit: the point of DefaultIndexShards.
	if large.BusiestWrites >= m.In.Limits["partitionWritesPerSecond"].Value {
		t.Errorf("busiest key %g write units/s at 10 M users", large.BusiestWrites)
	}
}

// Inputs the model cannot use are refused: a price without its source,
// plan shares that do not add up.
func TestLoadRefusesBadInputs(t *testing.T) {
	m := load(t)
	p := m.In.Prices["e2bSecond"]
	p.Source = ""
	m.In.Prices["e2bSecond"] = p
	if err := m.check(); err == nil || !strings.Contains(err.Error(), "e2bSecond") {
		t.Errorf("a price without its source: %v", err)
	}
	m = load(t)
	m.In.Plans[0].Share += 0.1
	if err := m.check(); err == nil {
		t.Error("plan shares of 1.1 accepted")
	}
	m = load(t)
	delete(m.In.Turn.OwnMillisAtMB, strconv.Itoa(int(m.MemoryMB["TurnFunction"])))
	if err := m.check(); err == nil {
		t.Error("no measured own time at the turn function's size accepted")
	}
	m = load(t)
	m.Watched.Shapes[0].ReadUnitsPerPoll = 0.5
	if err := m.check(); err == nil {
		t.Error("a read of half a unit accepted: a strongly consistent read is at least one")
	}
	m = load(t)
	m.In.Watch.WatchedShare = 1.5
	if err := m.check(); err == nil {
		t.Error("a watched share of 1.5 accepted")
	}
}

// The functions' memory is infra/lambdamem's, the sizes the stack
// deploys: the model prices the turn function at its size.
func TestMemoryIsTheStacks(t *testing.T) {
	m := load(t)
	sizes, err := lambdamem.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range functionIDs {
		want, err := sizes.MB(id)
		if err != nil || m.MemoryMB[id] != float64(want) {
			t.Errorf("%s: the model has %g MB, infra/lambdamem %d (%v)", id, m.MemoryMB[id], want, err)
		}
	}
	f := m.Compute(1e6)
	turnMB := m.MemoryMB["TurnFunction"]
	own, _ := m.ownMillis(turnMB)
	t0 := m.In.Turn
	wall := t0.ModelCallsPerTurn*t0.ModelSecondsPerCall + m.In.CodeShare*t0.CodeRunsPerSandbox*t0.CodeRunSeconds + own/1000 + t0.APIRequestsPerTurn*t0.APIMillis/1000
	want := turnMB/1024*wall*m.In.Prices["lambdaGBSecond"].USD + (1+t0.APIRequestsPerTurn)*m.In.Prices["lambdaRequest"].USD
	if got := m.turnLambda(turnMB); math.Abs(got-want) > 1e-12 {
		t.Errorf("turn function a turn %g, want %g", got, want)
	}
	if f.Cost["Lambda"] < want {
		t.Errorf("Lambda a turn %g below the turn function's %g", f.Cost["Lambda"], want)
	}
}

// Watching, by hand from the inputs and watch.json: a stream lasts the
// turn's wall and half a poll, and a resumed turn's retry and half its
// wall; it is billed at the events function's memory, polls every 250
// ms, reads the measured units a poll, and takes and frees a slot.
func TestWatcherFollowsTheInputs(t *testing.T) {
	m := load(t)
	m.In.Watch.WatchedShare, m.In.Watch.WatchersPerTurn, m.In.Watch.ResumedShare = 1, 1, 0
	turnMB, eventsMB := m.MemoryMB["TurnFunction"], m.MemoryMB["EventsFunction"]
	w := m.watcher(eventsMB, turnMB)
	wall := m.workerSeconds(turnMB) + m.apiSeconds()
	if want := wall + 0.125; math.Abs(w.StreamSeconds-want) > 1e-9 {
		t.Errorf("a stream lasts %g s, want %g", w.StreamSeconds, want)
	}
	perPoll, lo, hi := m.Watched.ReadUnitsPerPoll()
	if perPoll < 1 || lo > perPoll || hi < perPoll {
		t.Errorf("read units a poll %g (%g to %g)", perPoll, lo, hi)
	}
	p := func(k string) float64 { return m.In.Prices[k].USD }
	if want := w.StreamSeconds / 0.25 * perPoll * p("ddbReadUnit"); math.Abs(w.Reads-want) > 1e-15 {
		t.Errorf("reads %g, want %g", w.Reads, want)
	}
	if want := eventsMB/1024*w.StreamSeconds*p("lambdaGBSecond") + p("lambdaRequest"); math.Abs(w.Lambda-want) > 1e-15 {
		t.Errorf("events function %g, want %g", w.Lambda, want)
	}
	if want := m.In.Watch.SlotWriteUnitsPerStream * p("ddbWriteUnit"); math.Abs(w.Slots-want) > 1e-15 {
		t.Errorf("slots %g, want %g", w.Slots, want)
	}
	if w.Reconnects != 0 {
		t.Errorf("a %g s stream reconnects %g times under a %g s limit", w.StreamSeconds, w.Reconnects, streamMaxSeconds)
	}
	// Resumed turns hold their stream through the retry's wait.
	m.In.Watch.ResumedShare = 0.5
	r := m.watcher(eventsMB, turnMB)
	if want := w.StreamSeconds + 0.5*(m.In.Watch.RetryDelaySeconds+wall/2); math.Abs(r.StreamSeconds-want) > 1e-9 {
		t.Errorf("with half the turns resumed a stream lasts %g s, want %g", r.StreamSeconds, want)
	}
	// Nobody watching costs nothing; two watchers twice one.
	m.In.Watch.ResumedShare, m.In.Watch.WatchedShare = 0, 0
	if z := m.watcher(eventsMB, turnMB); z.Total() != 0 || z.DataOut != 0 {
		t.Errorf("unwatched turns cost %g to watch", z.Total())
	}
	m.In.Watch.WatchedShare, m.In.Watch.WatchersPerTurn = 1, 2
	if two := m.watcher(eventsMB, turnMB); math.Abs(two.Total()-2*w.Total()) > 1e-15 {
		t.Errorf("two watchers %g, one %g", two.Total(), w.Total())
	}
	// A stream that outlives the function's limit reconnects: a resumed
	// turn held for its attempts and retries.
	m.In.Watch.WatchersPerTurn, m.In.Watch.ResumedShare, m.In.Watch.MaxAttempts, m.In.Watch.RetryDelaySeconds = 1, 0.1, 5, 120
	long := m.watcher(eventsMB, turnMB)
	if long.WorstSeconds <= streamMaxSeconds || long.Reconnects <= 0 {
		t.Errorf("a worst stream of %g s (limit %g) reconnects %g times", long.WorstSeconds, streamMaxSeconds, long.Reconnects)
	}
}

// The watcher and the runs-by-user index are in a turn's cost: watching
// in its own part, the index in DynamoDB's; infrastructure is Lambda,
// DynamoDB, EventBridge, logs and watching.
func TestWatchingAndTheIndexAreCounted(t *testing.T) {
	m := load(t)
	f := m.Compute(1e6)
	if f.Cost["watching"] != f.Watch.Total() || f.Cost["watching"] <= 0 {
		t.Errorf("watching %g, the watcher %g", f.Cost["watching"], f.Watch.Total())
	}
	// The runs-by-user index's writes are in DynamoDB's cost once.
	user := m.In.IndexWrites["runs "+tablekeys.UserRunsIndex].PerTurn
	if want := user * m.In.Prices["ddbWriteUnit"].USD; f.ByUserIndex != want || want <= 0 {
		t.Errorf("the index a turn %g, want %g", f.ByUserIndex, want)
	}
	x := m.In.IndexWrites["runs "+tablekeys.UserRunsIndex]
	x.PerTurn = 0
	m.In.IndexWrites["runs "+tablekeys.UserRunsIndex] = x
	if g := m.Compute(1e6); math.Abs(f.Cost["DynamoDB"]-g.Cost["DynamoDB"]-f.ByUserIndex) > 1e-15 {
		t.Errorf("DynamoDB with the index %g, without %g, the index %g", f.Cost["DynamoDB"], g.Cost["DynamoDB"], f.ByUserIndex)
	}
	infra := 0.0
	for _, k := range infraParts {
		infra += f.Cost[k]
	}
	if math.Abs(infra-f.Infra) > 1e-15 || math.Abs(f.InfraShare-infra/f.Cost["model"]) > 1e-12 {
		t.Errorf("infrastructure %g (share %g), its parts %g", f.Infra, f.InfraShare, infra)
	}
	// The events function's concurrency is the streams open at the peak,
	// in the account's too.
	if want := f.PeakTurns * f.Watch.Streams * f.Watch.StreamSeconds; math.Abs(f.EventsConcurrency-want) > 1e-9 {
		t.Errorf("events concurrency %g, want %g", f.EventsConcurrency, want)
	}
}

// design is the design named name.
func design(t *testing.T, ds []Design, name string) Design {
	t.Helper()
	for _, d := range ds {
		if strings.HasPrefix(d.Name, name) {
			return d
		}
	}
	t.Fatalf("no design %q", name)
	return Design{}
}

// The designs that stop paying for waiting: a shared fleet runs the
// worker for a fraction of a turn an environment; the shared fleet's
// stream still pays its reads; a push pays by the event, not the wait.
func TestDesignsStopPayingForWaiting(t *testing.T) {
	m := load(t)
	workers, watchers := m.WorkerDesigns(), m.WatcherDesigns()
	today := design(t, workers, "Lambda, a turn an environment").USD
	lmi, nat := design(t, workers, "Lambda Managed Instances (").USD, design(t, workers, "Lambda Managed Instances, egress").USD
	for _, d := range []float64{lmi, nat, design(t, workers, "ECS on Fargate").USD} {
		if d >= today/4 {
			t.Errorf("a shared fleet's worker costs %g a turn, today %g", d, today)
		}
	}
	if nat <= lmi {
		t.Errorf("through a NAT gateway %g, without %g", nat, lmi)
	}
	f := m.Compute(1e6)
	urlToday := design(t, watchers, "function URL, today").USD
	if urlToday != f.Cost["watching"] {
		t.Errorf("today's watcher %g, the main table's %g", urlToday, f.Cost["watching"])
	}
	// The shared fleet still polls: more than its reads, less than today;
	// half the polls, less again.
	shared, slower := design(t, watchers, "the same stream from a shared fleet").USD, design(t, watchers, "the same from a shared fleet, polling every 500 ms").USD
	if shared < f.Watch.Reads || shared >= urlToday || slower >= shared || slower < f.Watch.Reads/2 {
		t.Errorf("the shared fleet's stream %g (every 500 ms %g): its reads %g, today %g", shared, slower, f.Watch.Reads, urlToday)
	}
	// Batching a second's events into one message costs no more.
	perEvent, perSecond := design(t, watchers, "API Gateway WebSocket API, a message an event").USD, design(t, watchers, "API Gateway WebSocket API, a message a second").USD
	if perSecond > perEvent {
		t.Errorf("a message a second %g, a message an event %g", perSecond, perEvent)
	}
	// A push costs by the event: twice the events, about twice the cost;
	// the polling stream does not notice.
	appSync := design(t, watchers, "AppSync").USD
	for i := range m.Watched.Shapes {
		m.Watched.Shapes[i].Events *= 2
		m.Watched.Shapes[i].StreamKB *= 2
	}
	twice := m.WatcherDesigns()
	if r := design(t, twice, "AppSync").USD / appSync; r < 1.9 || r > 2 {
		t.Errorf("AppSync with twice the events: %g× the cost", r)
	}
	if design(t, twice, "function URL, today").USD != urlToday {
		t.Errorf("today's stream changed with the events")
	}
	// Fewer watchers, cheaper pushes.
	m = load(t)
	m.In.Watch.WatchedShare = 0.5
	if half := design(t, m.WatcherDesigns(), "API Gateway WebSocket API, a message an event").USD; half >= perEvent {
		t.Errorf("half the turns watched %g, all %g", half, perEvent)
	}
}
