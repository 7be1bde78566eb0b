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
		CPUMillisPerTurn    float64 `json:"cpuMillisPerTurn"`
		CPUMillisSource     string  `json:"cpuMillisPerTurnSource"`
		APIRequestsPerTurn  float64 `json:"apiRequestsPerTurn"`
		APIMillis           float64 `json:"apiMillis"`
		MemoryMB            float64 `json:"memoryMB"`
		// PreviousMemoryMB is the size before the measurement of
		// docs/benchmarks.md ("Memory size"), to show the saving.
		PreviousMemoryMB float64 `json:"previousMemoryMB"`
		LogBytesPerTurn  float64 `json:"logBytesPerTurn"`
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
		MemoryMB           float64 `json:"memoryMB"`
		MillisPerBatch     float64 `json:"millisPerBatch"`
		BatchSize          float64 `json:"batchSize"`
		BatchWindowSeconds float64 `json:"batchWindowSeconds"`
		UserDaysCrossing   float64 `json:"userDaysCrossing"`
	} `json:"alarm"`
	Reaper struct {
		MemoryMB        float64 `json:"memoryMB"`
		SecondsPerSweep float64 `json:"secondsPerSweep"`
		SweepsPerDay    float64 `json:"sweepsPerDay"`
	} `json:"reaper"`
	// IndexWrites are an index's write units a turn, by "table index"
	// ("runs userRuns"), where make load's accounting does not count them
	// right: it takes an index projecting some attributes for keys only,
	// so the write that changes a projected attribute is missed. Each
	// replaces the measured figure of its index.
	IndexWrites map[string]IndexInput `json:"indexWrites"`
	Prices      map[string]Price      `json:"prices"`
	Limits      map[string]Limit      `json:"limits"`
	Stack       struct {
		Stage            string  `json:"stage"`
		SandboxCap       float64 `json:"sandboxCap"`
		SandboxCapSource string  `json:"sandboxCapSource"`
	} `json:"stack"`
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
	Stage       Stage
	IndexShards int
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
	"eventBridgeEvent", "logsIngestGB", "e2bSecond", "modelPromptMissPerM", "modelPromptHitPerM", "modelOutputPerM"}

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
	if m.IndexShards <= 0 || m.In.PeakFactor < 1 || len(m.In.Sizes) == 0 {
		return fmt.Errorf("shards %d, peak factor %g, %d sizes", m.IndexShards, m.In.PeakFactor, len(m.In.Sizes))
	}
	return nil
}
