package scale

import (
	"math"
	"sort"
	"strings"

	"github.com/commonly/runtime/shared/tablekeys"
)

// Figures are one size's results. Rates are at the daily peak; costs are
// USD.
type Figures struct {
	Users           float64
	TurnsPerDay     float64
	PeakTurns       float64 // turns a second
	APIRequests     float64 // a second
	TurnConcurrency float64
	AlarmInvokes    float64 // a second
	AlarmConcurrent float64
	StreamRecords   float64 // a second
	StreamShards    float64
	RunsGB          float64
	RunsWrites      float64 // write units a second
	StateWrites     float64
	IndexWrites     map[string]float64 // by "table index", write units a second
	BusiestKey      string
	BusiestWrites   float64
	Sandboxes       float64 // concurrent
	Events          float64 // a day
	Cost            map[string]float64
	CostPerTurn     float64
	CostPerUserDay  float64
	// Watch is what watching costs a turn; EventsConcurrency the events
	// function's executions at the peak.
	Watch             Watcher
	EventsConcurrency float64
	// ByUserIndex is the runs-by-user index's cost a turn (in DynamoDB).
	ByUserIndex float64
	// Infra is infrastructure's cost a turn (Lambda, DynamoDB,
	// EventBridge, logs, watching), InfraShare its share of the model's.
	Infra, InfraShare float64
	Binds             []Bind
}

// Bind is a limit and how much of it a size needs.
type Bind struct {
	What    string
	Need    float64
	Limit   float64
	Setting string
}

// Ratio is need over limit: 1 or more binds.
func (b Bind) Ratio() float64 { return b.Need / b.Limit }

// Cost components, in the table's order; infraParts are
// infrastructure's (the target's): the rest are the services a turn
// buys (E2B, the model) and the streams' bytes to the internet.
var (
	costParts  = []string{"Lambda", "DynamoDB", "EventBridge", "CloudWatch", "watching", "data out", "E2B", "model"}
	infraParts = []string{"Lambda", "DynamoDB", "EventBridge", "CloudWatch", "watching"}
)

// perTurn sums the measured figure of every table (or transaction over
// tables) whose name contains table, over keys accepted by keep.
func perTurn(m map[string]map[string]float64, table string, keep func(string) bool) float64 {
	sum := 0.0
	for t, ops := range m {
		if !strings.Contains(t, table) {
			continue
		}
		for op, v := range ops {
			if keep(op) {
				sum += v
			}
		}
	}
	return sum
}

func is(names ...string) func(string) bool {
	return func(s string) bool {
		for _, n := range names {
			if s == n {
				return true
			}
		}
		return false
	}
}

// Compute is the model at users daily users.
func (m Model) Compute(users float64) Figures {
	in := m.In
	price := func(k string) float64 { return in.Prices[k].USD }
	f := Figures{Users: users, IndexWrites: map[string]float64{}, Cost: map[string]float64{}}

	turnsPerUserDay := 0.0
	for _, p := range in.Plans {
		turnsPerUserDay += p.Share * p.TurnsPerUserDay
	}
	f.TurnsPerDay = users * turnsPerUserDay
	f.PeakTurns = f.TurnsPerDay / 86400 * in.PeakFactor
	f.APIRequests = f.PeakTurns * in.Turn.APIRequestsPerTurn

	// The turn function: the API's requests and the worker, whose wall
	// time is mostly the model's; its own time at its size as make
	// memsize measured it.
	t := in.Turn
	turnMB := m.MemoryMB["TurnFunction"]
	f.TurnConcurrency = f.PeakTurns * (m.workerSeconds(turnMB) + m.apiSeconds())
	lambdaTurn := m.turnLambda(turnMB)

	// DynamoDB, from the measured turn.
	writes := func(table string, keep func(string) bool) float64 {
		return perTurn(m.Measured.WriteUnitsPerTurn, table, keep)
	}
	runsWU := writes("runs", func(string) bool { return true })
	stateWU := writes("state", func(string) bool { return true })
	for table, ops := range m.Measured.WriteUnitsPerTurn {
		for op, v := range ops {
			if name, ok := strings.CutPrefix(op, "index "); ok {
				short := "state"
				if strings.Contains(table, "runs") {
					short = "runs"
				}
				f.IndexWrites[short+" "+name] += f.PeakTurns * v
			}
		}
	}
	// An index given in the inputs replaces its measured figure.
	for name, x := range in.IndexWrites {
		table, ix, _ := strings.Cut(name, " ")
		delta := x.PerTurn - writes(table, is("index "+ix))
		if table == "runs" {
			runsWU += delta
		} else {
			stateWU += delta
		}
		f.IndexWrites[name] = f.PeakTurns * x.PerTurn
	}
	f.RunsWrites, f.StateWrites = f.PeakTurns*runsWU, f.PeakTurns*stateWU
	readCalls := perTurn(m.Measured.DynamoDBCallsPerTurn, "", is("GetItem", "BatchGetItem", "Query"))
	runWrites := perTurn(m.Measured.DynamoDBCallsPerTurn, "runs", is("PutItem", "UpdateItem", "TransactWriteItems", "DeleteItem"))
	// Storage: runs kept RetentionDays after their day.
	f.RunsGB = f.TurnsPerDay * (in.RetentionDays + 1) * in.RunItemKB / (1024 * 1024)
	storageTurn := in.RunItemKB / (1024 * 1024) * price("ddbStorageGBMonth") * (in.RetentionDays + 1) / 30
	// The runs-by-user index (GET /v1/me/runs), in the runs table's
	// writes above: its part, shown apart.
	f.ByUserIndex = in.IndexWrites["runs "+tablekeys.UserRunsIndex].PerTurn * price("ddbWriteUnit")
	ddbTurn := (runsWU+stateWU)*price("ddbWriteUnit") + readCalls*price("ddbReadUnit") + storageTurn

	// The busiest single key: a shard of a sharded index, or a slot shard.
	for name, ws := range f.IndexWrites {
		if !strings.HasSuffix(name, " "+tablekeys.OpenIndex) && !strings.HasSuffix(name, " "+tablekeys.LiveIndex) {
			continue
		}
		if per := ws / float64(m.IndexShards); per > f.BusiestWrites {
			f.BusiestKey, f.BusiestWrites = "a shard of "+name, per
		}
	}
	sandboxStarts := f.PeakTurns * in.CodeShare
	slotShards := float64(tablekeys.SlotShards(int(in.Stack.SandboxCap)))
	if per := 2 * math.Min(sandboxStarts, in.Stack.SandboxCap/in.SandboxSecondsPerTurn) / slotShards; per > f.BusiestWrites {
		f.BusiestKey, f.BusiestWrites = "a shard of the sandbox slots", per
	}

	// The runs stream: about a shard a partition; partitions by size and
	// by writes. The alarm: one poller a shard (ParallelizationFactor 1).
	a := in.Alarm
	f.StreamRecords = f.PeakTurns * runWrites
	f.StreamShards = math.Max(math.Ceil(f.RunsGB/in.Limits["partitionGB"].Value), math.Ceil(f.RunsWrites/in.Limits["partitionWritesPerSecond"].Value))
	f.StreamShards = math.Max(f.StreamShards, 1)
	f.AlarmInvokes = math.Min(f.StreamRecords, math.Max(f.StreamRecords/a.BatchSize, f.StreamShards/a.BatchWindowSeconds))
	f.AlarmConcurrent = math.Min(f.StreamShards, f.AlarmInvokes*a.MillisPerBatch/1000)
	alarmPerDay := f.AlarmInvokes / in.PeakFactor * 86400
	alarmDay := alarmPerDay * (m.MemoryMB["AlarmFunction"]/1024*a.MillisPerBatch/1000*price("lambdaGBSecond") + price("lambdaRequest"))
	r := in.Reaper
	reaperDay := r.SweepsPerDay * (m.MemoryMB["ReaperFunction"]/1024*r.SecondsPerSweep*price("lambdaGBSecond") + price("lambdaRequest"))

	f.Sandboxes = f.PeakTurns * in.CodeShare * in.SandboxSecondsPerTurn
	f.Events = users * a.UserDaysCrossing

	tok := in.Tokens
	modelTurn := t.ModelCallsPerTurn * (tok.PromptPerCall*(1-tok.CachedShare)*price("modelPromptMissPerM") +
		tok.PromptPerCall*tok.CachedShare*price("modelPromptHitPerM") + tok.CompletionPerCall*price("modelOutputPerM")) / 1e6

	// A turn's share of the day's fixed costs (the alarm, the reaper, the
	// events) is the day's cost over the day's turns.
	f.Cost["Lambda"] = lambdaTurn + (alarmDay+reaperDay)/f.TurnsPerDay
	f.Cost["DynamoDB"] = ddbTurn
	f.Cost["EventBridge"] = f.Events * price("eventBridgeEvent") / f.TurnsPerDay
	f.Cost["CloudWatch"] = t.LogBytesPerTurn / 1e9 * price("logsIngestGB")
	f.Watch = m.watcher(m.MemoryMB["EventsFunction"], turnMB)
	f.Cost["watching"] = f.Watch.Total()
	f.Cost["data out"] = f.Watch.DataOut
	f.EventsConcurrency = f.PeakTurns * f.Watch.Streams * f.Watch.StreamSeconds
	f.Cost["E2B"] = in.CodeShare * in.SandboxSecondsPerTurn * price("e2bSecond")
	f.Cost["model"] = modelTurn
	for _, k := range costParts {
		f.CostPerTurn += f.Cost[k]
	}
	for _, k := range infraParts {
		f.Infra += f.Cost[k]
	}
	f.InfraShare = f.Infra / modelTurn
	f.CostPerUserDay = f.CostPerTurn * turnsPerUserDay

	reserved := func(fn string) float64 { return float64(m.Stage.ReservedConcurrency[fn]) }
	f.Binds = []Bind{
		{"Lambda concurrency of the account", f.TurnConcurrency + f.EventsConcurrency + f.AlarmConcurrent + 1, in.Limits["accountLambdaConcurrency"].Value, "a quota raise (Service Quotas)"},
		{"the turn function's reserved concurrency", f.TurnConcurrency, reserved("TurnFunction"), "cdk.json reservedConcurrency.TurnFunction"},
		{"the events function's reserved concurrency", f.EventsConcurrency, reserved("EventsFunction"), "cdk.json reservedConcurrency.EventsFunction"},
		{"the alarm's reserved concurrency", f.AlarmConcurrent, reserved("AlarmFunction"), "cdk.json reservedConcurrency.AlarmFunction"},
		{"the API's throttle", f.APIRequests, m.Stage.ThrottleRate, "cdk.json throttleRate"},
		{"E2B's concurrent sandboxes (the cap)", f.Sandboxes, in.Stack.SandboxCap, "SANDBOX_MAX_CONCURRENT (" + in.Limits["e2bPlanConcurrency"].Source + ")"},
		{"a partition key value's writes", f.BusiestWrites, in.Limits["partitionWritesPerSecond"].Value, "tablekeys.DefaultIndexShards"},
	}
	sort.SliceStable(f.Binds, func(i, j int) bool { return f.Binds[i].Ratio() > f.Binds[j].Ratio() })
	return f
}

// turnLambda is the turn function's Lambda cost a turn at mb: its API
// requests and its worker, each an invocation.
func (m Model) turnLambda(mb float64) float64 {
	t, price := m.In.Turn, func(k string) float64 { return m.In.Prices[k].USD }
	return mb/1024*(m.workerSeconds(mb)+m.apiSeconds())*price("lambdaGBSecond") + (1+t.APIRequestsPerTurn)*price("lambdaRequest")
}
