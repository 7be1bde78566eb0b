package reaper_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/store/storetest"
	"github.com/commonly/runtime/shared/syncbuf"
)

// The reaper is tested on the production parts: the E2B client against
// the spec-following fake (e2btest), the store against the embedded
// DynamoDB, the Reclaimer; fakes only where a failure must be forced.

var (
	tables = store.Tables{State: "state", Runs: "runs"}
	t0     = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	// expiredAt is the start of a sandbox exactly lifetime + grace before
	// t0: the oldest that is not yet killed is one nanosecond younger.
	expiredAt = t0.Add(-sandbox.Lifetime - reaper.DefaultGrace)
)

// clock is a settable clock shared by the fake E2B, the store's writers
// and the reaper.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// rig is one deployment ("test") and its neighbours on one E2B team.
type rig struct {
	clock *clock
	db    *dynamodblocal.Server
	st    *store.Dynamo
	e2b   *e2btest.Fake
	api   *e2b.Client
	logs  *syncbuf.Buffer
	emf   *syncbuf.Buffer
}

func newRig(t testing.TB) *rig {
	t.Helper()
	c := &clock{t: t0}
	db, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	f := e2btest.Start(t)
	f.SetClock(c.Now)
	cfg := f.ClientConfig()
	cfg.Now = c.Now
	api, err := e2b.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{clock: c, db: db, st: st, e2b: f, api: api, logs: &syncbuf.Buffer{}, emf: &syncbuf.Buffer{}}
}

// reaper is the rig's reaper with cfg's settings over the rig's parts
// (cfg.Providers, Registry and Runs left nil are the rig's E2B and
// store, and no runs).
func (r *rig) reaper(t testing.TB, cfg reaper.Config) *reaper.Reaper {
	t.Helper()
	if cfg.Stage == "" {
		cfg.Stage = e2btest.DefaultStage
	}
	if cfg.Providers == nil {
		cfg.Providers = []sandbox.Inventory{r.api}
	}
	if cfg.Registry == nil {
		cfg.Registry = r.st
	}
	cfg.Now = r.clock.Now
	cfg.Log = slog.New(slog.NewJSONHandler(r.logs, nil))
	emf, err := metrics.New(metrics.Config{Writer: r.emf, Now: r.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Metrics = emf
	rp, err := reaper.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// ours seeds one of this stage's sandboxes started at started, running
// until end (zero: started + 180 s, as created), and returns its id.
func (r *rig) ours(started, end time.Time) string {
	return r.e2b.Seed(e2btest.Seeded{StartedAt: started, EndAt: end, Metadata: e2b.Metadata(e2btest.DefaultStage, "run-x", "u", "i", started.Add(sandbox.Lifetime))})
}

// record writes the sandbox's registry row, as the run-code tool does.
func (r *rig) record(t testing.TB, id, runID string, created time.Time) {
	t.Helper()
	rec := sandbox.NewRecord(e2b.ProviderName, id, sandbox.Meta{RunID: runID, UserID: "u", InstallID: "i"}, created)
	if err := r.st.SandboxCreated(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
}

// status is the registry row's status ("" when there is none).
func (r *rig) status(t testing.TB, id string) string {
	t.Helper()
	rec, found, err := storetest.Sandbox(context.Background(), r.db.Client(), tables.State, id)
	if err != nil {
		t.Fatal(err)
	}
	if !found {
		return ""
	}
	return rec.Status
}

func (r *rig) alive(id string) bool {
	_, ok := r.e2b.Sandbox(id)
	return ok
}

// metrics is the last EMF event's values by name.
func (r *rig) metrics(t testing.TB) map[string]float64 {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(r.emf.String()), "\n")
	var doc map[string]any
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &doc); err != nil {
		t.Fatalf("EMF line %q: %v", lines[len(lines)-1], err)
	}
	out := map[string]float64{}
	for _, name := range reaper.MetricNames {
		v, ok := doc[name].(float64)
		if !ok {
			t.Errorf("metric %s missing from %s", name, lines[len(lines)-1])
		}
		out[name] = v
	}
	aws := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if aws["Namespace"] != metrics.Namespace {
		t.Errorf("namespace %v", aws["Namespace"])
	}
	if dims := aws["Dimensions"].([]any); len(dims) != 1 || len(dims[0].([]any)) != 0 {
		t.Errorf("dimensions %v, want none", dims)
	}
	// The event declares MetricNames and no other (the CDK stack's
	// dashboard shows each).
	var declared []string
	for _, m := range aws["Metrics"].([]any) {
		declared = append(declared, m.(map[string]any)["Name"].(string))
	}
	if !slices.Equal(slices.Sorted(slices.Values(declared)), slices.Sorted(slices.Values(reaper.MetricNames))) {
		t.Errorf("metrics declared %v, want %v", declared, reaper.MetricNames)
	}
	return out
}

// sweepLine is the last "reaper sweep" log line.
func (r *rig) sweepLine(t testing.TB) map[string]any {
	t.Helper()
	var last map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(r.logs.String()), "\n") {
		var doc map[string]any
		if json.Unmarshal([]byte(line), &doc) == nil && doc["msg"] == "reaper sweep" {
			last = doc
		}
	}
	if last == nil {
		t.Fatalf("no sweep log line in:\n%s", r.logs.String())
	}
	return last
}
