// Package scale is the scale and cost model of docs/scale.md: from the
// inputs (inputs.json: traffic, the turn's shape, prices with their date
// and source, quotas), the figures a turn measured (measured.json, which
// `make load` writes) and the stack's own settings (cdk.json's stage,
// the shard count), it computes for each number of daily users the peak
// load on every part, the cost a turn and a user-day, and the first limit
// that binds. `make scale` writes its table into docs/scale.md; a test
// keeps the two equal.
package scale

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/commonly/runtime/infra/lambdamem"
)

// Price is a unit price with where it comes from.
type Price struct {
	USD    float64 `json:"usd"`
	Unit   string  `json:"unit"`
	Date   string  `json:"date"`
	Source string  `json:"source"`
}

// IndexInput is an index's write units a turn, with why.
type IndexInput struct {
	PerTurn float64 `json:"perTurn"`
	Source  string  `json:"source"`
}

// Limit is a quota or a service limit with its source.
type Limit struct {
	Value  float64 `json:"value"`
	Source string  `json:"source"`
}

// Plan is a plan's share of the daily users and their turns.
type Plan struct {
	Name            string  `json:"name"`
	Share           float64 `json:"share"`
	TurnsPerUserDay float64 `json:"turnsPerUserDay"`
	Ceiling         float64 `json:"ceiling"`
}

// Inputs is inputs.json.
type Inputs struct {
	Sizes      []float64 `json:"sizes"`
	PeakFactor float64   `json:"peakFactor"`
	Plans      []Plan    `json:"plans"`
	CodeShare  float64   `json:"codeShare"`
	Turn       struct {
		ModelCallsPerTurn   float64 `json:"modelCallsPerTurn"`
		ModelSecondsPerCall float64 `json:"modelSecondsPerCall"`
		CodeRunsPerSandbox  float64 `json:"codeRunsPerSandbox"`
		CodeRunSeconds      float64 `json:"codeRunSeconds"`
		// OwnMillisAtMB is the turn function's own time a turn (its wall
		// less the model's) at each memory size, as make memsize measured
		// it on the turns users send; "0" is without a quota.
		OwnMillisAtMB      map[string]float64 `json:"ownMillisAtMB"`
		OwnMillisSource    string             `json:"ownMillisSource"`
		APIRequestsPerTurn float64            `json:"apiRequestsPerTurn"`
		APIMillis          float64            `json:"apiMillis"`
		LogBytesPerTurn    float64            `json:"logBytesPerTurn"`
	} `json:"turn"`
	Tokens struct {
		PromptPerCall     float64 `json:"promptPerCall"`
		CachedShare       float64 `json:"cachedShare"`
		CompletionPerCall float64 `json:"completionPerCall"`
	} `json:"tokens"`
	SandboxSecondsPerTurn float64 `json:"sandboxSecondsPerTurn"`
	RunItemKB             float64 `json:"runItemKB"`
	RetentionDays         float64 `json:"retentionDays"`
	Alarm                 struct {
		MillisPerBatch     float64 `json:"millisPerBatch"`
		BatchSize          float64 `json:"batchSize"`
		BatchWindowSeconds float64 `json:"batchWindowSeconds"`
		UserDaysCrossing   float64 `json:"userDaysCrossing"`
	} `json:"alarm"`
	Reaper struct {
		SecondsPerSweep float64 `json:"secondsPerSweep"`
		SweepsPerDay    float64 `json:"sweepsPerDay"`
	} `json:"reaper"`
	Watch   Watch   `json:"watch"`
	Designs Designs `json:"designs"`
	// TargetShare is the most infrastructure may cost a turn, as a share
	// of the model's cost a turn (issue 39: 2 %).
	TargetShare float64 `json:"targetShare"`
	// IndexWrites are an index's write units a turn, by "table index"
	// ("runs userRuns"), where make load's accounting does not count them
	// right: it takes an index projecting some attributes for keys only,
	// so the write that changes a projected attribute is missed. Each
	// replaces the measured figure of its index.
	IndexWrites map[string]IndexInput `json:"indexWrites"`
	// PricesNote says how the prices were read.
	PricesNote string           `json:"pricesNote"`
	Prices     map[string]Price `json:"prices"`
	Limits     map[string]Limit `json:"limits"`
	Stack      struct {
		Stage            string  `json:"stage"`
		SandboxCap       float64 `json:"sandboxCap"`
		SandboxCapSource string  `json:"sandboxCapSource"`
	} `json:"stack"`
}

// Watch is how turns are watched through the events function (GET
// /v1/runs/{runId}/events): inputs the code does not fix.
type Watch struct {
	// WatchedShare of turns have WatchersPerTurn streams open on them from
	// their admission to their end.
	WatchedShare    float64 `json:"watchedShare"`
	WatchersPerTurn float64 `json:"watchersPerTurn"`
	// SlotWriteUnitsPerStream: the per-user stream slot taken and freed
	// on the state table, each a small item.
	SlotWriteUnitsPerStream float64 `json:"slotWriteUnitsPerStream"`
	SlotSource              string  `json:"slotSource"`
	LogBytesPerStream       float64 `json:"logBytesPerStream"`
	// ResumedShare of turns lose their worker and resume after
	// RetryDelaySeconds (Lambda's first asynchronous retry); the stream
	// stays open through the wait and the lost attempt, half a turn on
	// average. MaxAttempts bound a turn's attempts (the longest stream).
	ResumedShare      float64 `json:"resumedShare"`
	ResumedSource     string  `json:"resumedSource"`
	RetryDelaySeconds float64 `json:"retryDelaySeconds"`
	RetrySource       string  `json:"retrySource"`
	MaxAttempts       float64 `json:"maxAttempts"`
}

// Designs are the inputs of the designs that stop paying for waiting
// (docs/scale.md, "What it would take"): what the prices do not say.
type Designs struct {
	// Push (AppSync Events, an API Gateway WebSocket API): each event
	// the worker records is one message (as the stream sends it today),
	// plus the connection's own.
	AppSyncOpsPerConnection   float64 `json:"appSyncOpsPerConnection"`
	WebSocketMessagesPerConn  float64 `json:"webSocketMessagesPerConnection"`
	WebSocketAuthorizerMillis float64 `json:"webSocketAuthorizerMillis"`
	WebSocketAuthorizerMB     float64 `json:"webSocketAuthorizerMB"`
	WebSocketWriteUnits       float64 `json:"webSocketWriteUnitsPerConnection"`
	// Many turns in one process (Lambda Managed Instances, ECS on
	// Fargate): each turn's CPU at a full core (make memsize), the
	// memory a turn in flight holds, the CPU utilisation the fleet is
	// run at and the headroom kept for the peak and for scaling (a fleet
	// scaled to the hour's load runs at about 1/Headroom of it).
	TurnCPUMillis      float64 `json:"turnCpuMillis"`
	TurnCPUSource      string  `json:"turnCpuSource"`
	TurnMemoryMB       float64 `json:"turnMemoryMB"`
	TurnMemorySource   string  `json:"turnMemorySource"`
	CPUUtilisation     float64 `json:"cpuUtilisation"`
	Headroom           float64 `json:"headroom"`
	HeadroomSource     string  `json:"headroomSource"`
	LMIInstance        string  `json:"lmiInstance"`
	LMIInstanceVCPU    float64 `json:"lmiInstanceVCPU"`
	LMIInstanceGB      float64 `json:"lmiInstanceGB"`
	FargateTaskVCPU    float64 `json:"fargateTaskVCPU"`
	FargateTaskGB      float64 `json:"fargateTaskGB"`
	SQSRequestsPerTurn float64 `json:"sqsRequestsPerTurn"`
	SQSRequestsSource  string  `json:"sqsRequestsSource"`
	EgressKBPerTurn    float64 `json:"egressKBPerTurn"`
	EgressSource       string  `json:"egressSource"`
}

// Measured is measured.json: what a turn cost in DynamoDB in a run of
// `make load` (or, until one is written, `make bench`). Its shape is
// bench/internal/load.Measured's.
type Measured struct {
	Source string `json:"source"`
	Date   string `json:"date"`
	Turns  int    `json:"turns"`
	// DynamoDBCallsPerTurn is by table ("a+b" for a transaction over
	// two) and operation; WriteUnitsPerTurn by table and by "table" or
	// "index <name>".
	DynamoDBCallsPerTurn map[string]map[string]float64 `json:"dynamodbCallsPerTurn"`
	WriteUnitsPerTurn    map[string]map[string]float64 `json:"writeUnitsPerTurn"`
	PeakOpenRuns         int                           `json:"peakOpenRuns"`
}

// Stage is what the model reads of a cdk.json stage.
type Stage struct {
	ThrottleRate        float64        `json:"throttleRate"`
	ReservedConcurrency map[string]int `json:"reservedConcurrency"`
}

// Model is everything the computation reads.
type Model struct {
	In          Inputs
	Measured    Measured
	Watched     Watched
	Stage       Stage
	IndexShards int
	// MemoryMB is each function's memory (infra/lambdamem), by
	// construct id; the stack deploys the same.
	MemoryMB map[string]float64
}

// Load reads inputs.json and measured.json from dir and the stage named
// in the inputs from cdkJSON; shards is the indexes' shard count.
func Load(dir, cdkJSON string, shards int) (Model, error) {
	m := Model{IndexShards: shards}
	if err := readJSON(filepath.Join(dir, "inputs.json"), &m.In); err != nil {
		return m, err
	}
	if err := readJSON(filepath.Join(dir, "measured.json"), &m.Measured); err != nil {
		return m, err
	}
	if err := readJSON(filepath.Join(dir, "watch.json"), &m.Watched); err != nil {
		return m, err
	}
	sizes, err := lambdamem.Load()
	if err != nil {
		return m, err
	}
	m.MemoryMB = map[string]float64{}
	for _, id := range sizes.IDs() {
		mb, _ := sizes.MB(id)
		m.MemoryMB[id] = float64(mb)
	}
	var cdk struct {
		Context struct {
			Stages map[string]Stage `json:"stages"`
		} `json:"context"`
	}
	if err := readJSON(cdkJSON, &cdk); err != nil {
		return m, err
	}
	st, ok := cdk.Context.Stages[m.In.Stack.Stage]
	if !ok {
		return m, fmt.Errorf("%s has no stage %q", cdkJSON, m.In.Stack.Stage)
	}
	m.Stage = st
	return m, m.check()
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// prices the model needs, each with a date and a source.
var neededPrices = []string{"lambdaGBSecond", "lambdaRequest", "ddbWriteUnit", "ddbReadUnit", "ddbStorageGBMonth",
	"eventBridgeEvent", "logsIngestGB", "e2bSecond", "modelPromptMissPerM", "modelPromptHitPerM", "modelOutputPerM",
	"dataOutGB", "appSyncEventOperation", "appSyncConnectionMinute", "webSocketMessage", "webSocketConnectionMinute",
	"lmiInstanceHour", "lmiManagementFee", "fargateVCPUHour", "fargateGBHour", "sqsRequest", "natGatewayGB", "publicIPv4Hour"}

// functions the model prices, each with a memory size in infra/lambdamem.
var functionIDs = []string{"TurnFunction", "AlarmFunction", "ReaperFunction", "EventsFunction"}

var neededLimits = []string{"accountLambdaConcurrency", "partitionWritesPerSecond", "e2bPlanConcurrency", "partitionGB"}

// check refuses inputs the model cannot use: a missing price, a price
// without its date or source, plan shares that do not add up, a measured
// file without its source.
func (m Model) check() error {
	for _, k := range neededPrices {
		p, ok := m.In.Prices[k]
		if !ok || p.USD <= 0 || p.Date == "" || p.Source == "" {
			return fmt.Errorf("price %s: missing, not positive, or without its date and source", k)
		}
	}
	for _, k := range neededLimits {
		if l, ok := m.In.Limits[k]; !ok || l.Value <= 0 || l.Source == "" {
			return fmt.Errorf("limit %s: missing, not positive, or without its source", k)
		}
	}
	share := 0.0
	for _, p := range m.In.Plans {
		share += p.Share
	}
	if share < 0.999 || share > 1.001 {
		return fmt.Errorf("plan shares add up to %g, not 1", share)
	}
	if m.Measured.Source == "" || m.Measured.Turns <= 0 || len(m.Measured.WriteUnitsPerTurn) == 0 {
		return fmt.Errorf("measured.json: no source, turns or write units")
	}
	if err := m.Watched.check(); err != nil {
		return err
	}
	for _, id := range functionIDs {
		if m.MemoryMB[id] <= 0 {
			return fmt.Errorf("infra/lambdamem has no memory size for %s", id)
		}
	}
	if len(m.In.Turn.OwnMillisAtMB) == 0 || m.In.Turn.OwnMillisSource == "" {
		return fmt.Errorf("turn.ownMillisAtMB: no measured own time, or no source")
	}
	if _, ok := m.ownMillis(m.MemoryMB["TurnFunction"]); !ok {
		return fmt.Errorf("turn.ownMillisAtMB has no figure at the turn function's %g MB", m.MemoryMB["TurnFunction"])
	}
	w := m.In.Watch
	if w.WatchedShare < 0 || w.WatchedShare > 1 || w.WatchersPerTurn < 0 || w.ResumedShare < 0 || w.ResumedShare > 1 {
		return fmt.Errorf("watch: shares must be between 0 and 1, watchers not negative")
	}
	if m.In.TargetShare <= 0 {
		return fmt.Errorf("targetShare must be positive")
	}
	if m.IndexShards <= 0 || m.In.PeakFactor < 1 || len(m.In.Sizes) == 0 {
		return fmt.Errorf("shards %d, peak factor %g, %d sizes", m.IndexShards, m.In.PeakFactor, len(m.In.Sizes))
	}
	return nil
}
