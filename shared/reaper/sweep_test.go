package reaper_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/turns"
)

// One deployment's 250 sandboxes over three pages of E2B's list (expired
// with E2B's end still ahead, timeouts extended by mistake, young ones
// up to a nanosecond short of the limit), its neighbours' (another
// stage, another application), and records of the state table (some of
// the listed, some already gone from E2B): exactly this stage's past
// their lifetime are killed, each once, and their records marked.
func TestSweepKillsOnlyOursPastTheirLifetime(t *testing.T) {
	r := newRig(t)
	var expired, young, gone []string
	for i := range 60 { // past lifetime + grace; E2B would keep them 30 s more
		expired = append(expired, r.ours(expiredAt.Add(-time.Duration(i)*time.Second), t0.Add(30*time.Second)))
	}
	for i := range 40 { // extended: an hour old, an hour to go
		expired = append(expired, r.ours(t0.Add(-time.Hour-time.Duration(i)*time.Minute), t0.Add(time.Hour)))
	}
	young = append(young, r.ours(expiredAt.Add(time.Nanosecond), t0.Add(30*time.Second)))
	for i := range 149 {
		young = append(young, r.ours(t0.Add(-time.Duration(i)*time.Second), time.Time{}))
	}
	var others []string
	for i := range 20 {
		md := e2b.Metadata("prod", "run-p", "u", "i", t0)
		others = append(others, r.e2b.Seed(e2btest.Seeded{StartedAt: t0.Add(-time.Hour - time.Duration(i)*time.Second), EndAt: t0.Add(time.Hour), Metadata: md}))
	}
	for i := range 10 {
		md := map[string]string{"app": "someone-else", "stage": e2btest.DefaultStage}
		others = append(others, r.e2b.Seed(e2btest.Seeded{StartedAt: t0.Add(-time.Hour - time.Duration(i)*time.Second), EndAt: t0.Add(time.Hour), Metadata: md}))
	}
	for _, id := range expired[:10] {
		info, _ := r.e2b.Sandbox(id)
		r.record(t, id, "run-x", info.StartedAt)
	}
	for _, id := range young[:10] {
		info, _ := r.e2b.Sandbox(id)
		r.record(t, id, "run-x", info.StartedAt)
	}
	for i := range 5 { // E2B ended them; their turns died before marking them
		id := fmt.Sprintf("sbx-gone-%d", i)
		gone = append(gone, id)
		r.record(t, id, "run-gone", expiredAt.Add(-time.Minute))
	}

	rp := r.reaper(t, reaper.Config{})
	rep, err := rp.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := reaper.Report{
		Listed: 250, Pages: 3, Recorded: 15, Expired: 105, Killed: 100, AlreadyGone: 5,
		Marked: 15, SourcesRead: 2,
	}
	rep.Elapsed = 0
	if rep != want {
		t.Fatalf("report\n got %+v\nwant %+v", rep, want)
	}
	kills := r.e2b.Kills()
	slices.Sort(kills)
	wantKills := slices.Sorted(slices.Values(expired))
	if !slices.Equal(kills, wantKills) {
		t.Fatalf("killed %d sandboxes, want exactly the 100 expired ones of this stage", len(kills))
	}
	if calls := r.e2b.Calls(); calls[e2btest.CallList] != 3 || calls[e2btest.CallKill] != 105 {
		t.Errorf("E2B calls %v: want 3 list pages and one kill each", calls)
	}
	for _, id := range append(slices.Clone(young), others...) {
		if !r.alive(id) {
			t.Errorf("%s was killed: young or not ours", id)
		}
	}
	for _, id := range append(slices.Clone(expired[:10]), gone...) {
		if got := r.status(t, id); got != sandbox.StatusKilled {
			t.Errorf("record %s is %q, want killed", id, got)
		}
	}
	for _, id := range young[:10] {
		if got := r.status(t, id); got != sandbox.StatusRunning {
			t.Errorf("young record %s is %q", id, got)
		}
	}
	m := r.metrics(t)
	for name, v := range map[string]float64{
		"SandboxesListed": 250, "SandboxesExpired": 105, "SandboxesKilled": 100, "SandboxesAlreadyGone": 5,
		"SandboxKillFailures": 0, "SandboxesLeft": 0, "SourceFailures": 0, "RunsInterrupted": 0,
	} {
		if m[name] != v {
			t.Errorf("metric %s = %v, want %v", name, m[name], v)
		}
	}
	line := r.sweepLine(t)
	if line["killed"] != float64(100) || line["alreadyGone"] != float64(5) || line["level"] != "INFO" {
		t.Errorf("sweep log line %v", line)
	}

	// The next sweep finds nothing more to do.
	rep, err = rp.Sweep(context.Background())
	if err != nil || rep.Expired != 0 || rep.Listed != 150 || len(r.e2b.Kills()) != 100 {
		t.Fatalf("second sweep: %+v, %v", rep, err)
	}
}

// The list shifts while it is paged (offset cursors, as the fake's):
// rows inserted before the cursor come again on the next page. Each
// sandbox is decided once, on its own start, and killed once; what the
// shift hid from this sweep is the next one's.
func TestListShiftingBetweenPages(t *testing.T) {
	r := newRig(t)
	var expired, young, late []string
	for i := range 150 {
		expired = append(expired, r.ours(expiredAt.Add(-time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour)))
	}
	for i := range 50 {
		young = append(young, r.ours(t0.Add(-time.Duration(i)*time.Second), time.Time{}))
	}
	r.e2b.BeforeList(func(n int) {
		if n != 2 {
			return
		}
		// Older than every other, they sort first: page 1's last ten
		// rows come again on page 2, and these are not seen this time.
		for i := range 10 {
			late = append(late, r.ours(expiredAt.Add(-2*time.Hour+time.Duration(i)*time.Second), t0.Add(time.Hour)))
		}
		for range 10 {
			young = append(young, r.ours(t0, time.Time{}))
		}
	})
	rp := r.reaper(t, reaper.Config{})
	rep, err := rp.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// 220 rows over 3 pages: 10 were seen twice, 10 (the late ones) never.
	if rep.Pages != 3 || rep.Listed != 210 || rep.Expired != 150 || rep.Killed != 150 {
		t.Fatalf("report %+v", rep)
	}
	if calls := r.e2b.Calls(); calls[e2btest.CallKill] != 150 {
		t.Errorf("%d kills for 150 sandboxes", calls[e2btest.CallKill])
	}
	for _, id := range expired {
		if r.alive(id) {
			t.Errorf("expired %s survived", id)
		}
	}
	for _, id := range young {
		if !r.alive(id) {
			t.Errorf("young %s killed", id)
		}
	}
	r.e2b.BeforeList(nil)
	rep, err = rp.Sweep(context.Background())
	if err != nil || rep.Killed != 10 {
		t.Fatalf("next sweep: %+v, %v", rep, err)
	}
	for _, id := range late {
		if r.alive(id) {
			t.Errorf("%s survived the next sweep", id)
		}
	}
}

// Kills answering 404 (gone by itself since the list) and 500 mid-sweep:
// the first is success and its record marked, the second a failure whose
// record stays running, retried by the next sweep.
func TestKillAnswering404And500(t *testing.T) {
	r := newRig(t)
	var ids []string
	for i := range 20 {
		id := r.ours(expiredAt.Add(-time.Duration(i)*time.Second), t0.Add(time.Hour))
		r.record(t, id, "run-x", expiredAt.Add(-time.Duration(i)*time.Second))
		ids = append(ids, id)
	}
	gone, failing := ids[7], ids[12]
	r.e2b.FailKill(gone, http.StatusNotFound)
	r.e2b.FailKill(failing, http.StatusInternalServerError)
	rp := r.reaper(t, reaper.Config{})
	rep, err := rp.Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Killed != 18 || rep.AlreadyGone != 1 || rep.KillFailures != 1 || rep.Marked != 19 || rep.SourceFailures != 0 {
		t.Fatalf("report %+v", rep)
	}
	if r.status(t, gone) != sandbox.StatusKilled || r.status(t, failing) != sandbox.StatusRunning || !r.alive(failing) {
		t.Fatalf("gone: %q; failing: %q, alive %v", r.status(t, gone), r.status(t, failing), r.alive(failing))
	}
	if m := r.metrics(t); m["SandboxKillFailures"] != 1 || m["SandboxesAlreadyGone"] != 1 {
		t.Errorf("metrics %v", m)
	}
	if !strings.Contains(r.logs.String(), `"sandbox kill failed; the next sweep retries"`) || !strings.Contains(r.logs.String(), failing) {
		t.Errorf("the failed kill is not logged with its sandbox:\n%s", r.logs.String())
	}
	if strings.Contains(r.logs.String(), e2btest.DefaultAPIKey) {
		t.Error("the API key reached the log")
	}
	rep, err = rp.Sweep(context.Background())
	if err != nil || rep.Killed != 1 || rep.KillFailures != 0 || r.alive(failing) || r.status(t, failing) != sandbox.StatusKilled {
		t.Fatalf("next sweep: %+v, %v", rep, err)
	}
}

// A list page failing: the pages before it are used, the sweep goes on
// with the state table's records (counted as a source failure, not an
// error), and the next sweep reads what this one could not.
func TestListPageFailingGoesOnWithTheRegistry(t *testing.T) {
	r := newRig(t)
	var expired []string
	for i := range 150 { // pages 1 and 2 (asc: oldest first)
		started := expiredAt.Add(-time.Hour + time.Duration(i)*time.Second)
		id := r.ours(started, t0.Add(time.Hour))
		expired = append(expired, id)
		if i >= 120 { // on page 2, recorded
			r.record(t, id, "run-x", started)
		}
	}
	for i := range 100 {
		r.ours(t0.Add(-time.Duration(i)*time.Second), time.Time{})
	}
	r.e2b.FailListAfter(1, http.StatusInternalServerError)
	rp := r.reaper(t, reaper.Config{})
	rep, err := rp.Sweep(context.Background())
	if err != nil {
		t.Fatalf("a failing page failed the sweep: %v", err)
	}
	if rep.Pages != 1 || rep.Listed != 100 || rep.Recorded != 30 || rep.Killed != 130 || rep.SourceFailures != 1 || rep.SourcesRead != 2 {
		t.Fatalf("report %+v", rep)
	}
	for _, id := range expired[100:120] {
		if !r.alive(id) {
			t.Fatalf("%s: neither listed nor recorded, yet killed", id)
		}
	}
	if m := r.metrics(t); m["SourceFailures"] != 1 {
		t.Errorf("metrics %v", m)
	}
	if !strings.Contains(r.logs.String(), `"reaper source failed"`) || !strings.Contains(r.logs.String(), "e2b list") {
		t.Errorf("the failed source is not logged:\n%s", r.logs.String())
	}
	rep, err = rp.Sweep(context.Background())
	if err != nil || rep.Killed != 20 || rep.SourceFailures != 0 {
		t.Fatalf("next sweep: %+v, %v", rep, err)
	}
}

// E2B's list unreadable from its first page: the records alone drive the
// sweep, through the same E2B client's kills.
func TestRegistryAlone(t *testing.T) {
	r := newRig(t)
	var recorded, unrecorded, young []string
	for i := range 20 {
		started := expiredAt.Add(-time.Duration(i) * time.Minute)
		id := r.ours(started, t0.Add(time.Hour))
		r.record(t, id, "run-x", started)
		recorded = append(recorded, id)
	}
	for i := range 10 {
		unrecorded = append(unrecorded, r.ours(expiredAt.Add(-time.Duration(i)*time.Minute), t0.Add(time.Hour)))
	}
	for i := range 5 {
		id := r.ours(t0.Add(-time.Duration(i)*time.Second), time.Time{})
		r.record(t, id, "run-y", t0.Add(-time.Duration(i)*time.Second))
		young = append(young, id)
	}
	r.e2b.FailListAfter(0, http.StatusUnauthorized)
	rep, err := r.reaper(t, reaper.Config{}).Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rep.Pages != 0 || rep.Recorded != 20 || rep.Killed != 20 || rep.Marked != 20 || rep.SourceFailures != 1 || rep.SourcesRead != 1 {
		t.Fatalf("report %+v", rep)
	}
	for _, id := range recorded {
		if r.alive(id) || r.status(t, id) != sandbox.StatusKilled {
			t.Errorf("recorded %s: alive %v, record %q", id, r.alive(id), r.status(t, id))
		}
	}
	for _, id := range append(unrecorded, young...) {
		if !r.alive(id) {
			t.Errorf("%s killed", id)
		}
	}
}

// A context that ends mid-sweep (the caller's here) leaves the rest for
// the next sweep: counted, without an error.
func TestContextEndingMidSweepLeavesTheRest(t *testing.T) {
	r := newRig(t)
	for i := range 40 {
		r.ours(expiredAt.Add(-time.Duration(i)*time.Second), t0.Add(time.Hour))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var kills atomic.Int32
	r.e2b.BeforeKill(func(string) {
		if kills.Add(1) == 6 {
			cancel()
		}
	})
	rp := r.reaper(t, reaper.Config{KillConcurrency: 1})
	rep, err := rp.Sweep(ctx)
	if err != nil {
		t.Fatalf("a sweep cut short failed: %v", err)
	}
	// The sixth kill may land before its caller sees the cancellation.
	if !rep.Cut || (rep.Killed != 5 && rep.Killed != 6) || rep.Killed+rep.Left != 40 || rep.KillFailures != 0 {
		t.Fatalf("report %+v", rep)
	}
	if m := r.metrics(t); m["SandboxesLeft"] != float64(rep.Left) {
		t.Errorf("metrics %v", m)
	}
	r.e2b.BeforeKill(nil)
	left := r.e2b.Alive()
	rep, err = rp.Sweep(context.Background())
	if err != nil || left < 40-6 || rep.Killed != left || r.e2b.Alive() != 0 {
		t.Fatalf("next sweep: %+v, %v (%d left, %d alive)", rep, err, left, r.e2b.Alive())
	}
}

// The sweep's own deadline: a kill that hangs is given up when it
// passes, and what was not reached is left, without an error.
func TestSweepDeadline(t *testing.T) {
	r := newRig(t)
	for i := range 40 {
		r.ours(expiredAt.Add(-time.Duration(i)*time.Second), t0.Add(time.Hour))
	}
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var kills atomic.Int32
	r.e2b.BeforeKill(func(string) {
		if kills.Add(1) == 3 {
			<-release // E2B hangs on this one
		}
	})
	deadline := 300 * time.Millisecond
	if dynamodblocal.OnReference() {
		// DynamoDB Local answers in milliseconds, not microseconds: the
		// two kills' reads and writes need longer before the third hangs.
		deadline = 3 * time.Second
	}
	rep, err := r.reaper(t, reaper.Config{KillConcurrency: 1, Deadline: deadline}).Sweep(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Cut || rep.Killed != 2 || rep.Left != 38 || rep.KillFailures != 0 || rep.Listed != 40 {
		t.Fatalf("report %+v", rep)
	}
}

// failingRegistry is a state table that cannot be read.
type failingRegistry struct{ reaper.Registry }

func (failingRegistry) ExpiredSandboxes(context.Context, int, time.Time, int32) ([]sandbox.Record, error) {
	return nil, errors.New("AccessDeniedException: not authorized to perform dynamodb:Query")
}

// failingRuns is a runs table that cannot be read.
type failingRuns struct{ *fakeRuns }

func (failingRuns) Abandoned(context.Context, int, int) ([]turns.OpenRun, error) {
	return nil, errors.New("ProvisionedThroughputExceededException")
}

// Neither source readable: the sweep fails, naming each source, so the
// schedule's failure alarm fires; its metrics are still emitted.
func TestNoSourceReadableFailsTheSweep(t *testing.T) {
	r := newRig(t)
	r.ours(expiredAt, t0.Add(time.Hour))
	r.e2b.FailListAfter(0, http.StatusInternalServerError)
	rep, err := r.reaper(t, reaper.Config{Registry: failingRegistry{r.st}, Runs: failingRuns{&fakeRuns{}}}).Sweep(context.Background())
	if err == nil {
		t.Fatalf("no source read, no error: %+v", rep)
	}
	for _, want := range []string{"e2b list", "status 500", "live index", "AccessDenied", "open runs", "Throughput"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %s", err, want)
		}
	}
	if rep.SourceFailures != 3 || rep.SourcesRead != 0 || rep.Killed != 0 {
		t.Errorf("report %+v", rep)
	}
	if m := r.metrics(t); m["SourceFailures"] != 3 {
		t.Errorf("metrics %v", m)
	}
	// Any one source read is a sweep.
	r.e2b.FailListAfter(0, http.StatusInternalServerError)
	if _, err := r.reaper(t, reaper.Config{Runs: failingRuns{&fakeRuns{}}}).Sweep(context.Background()); err != nil {
		t.Errorf("the live index read, yet: %v", err)
	}
}

func TestNewChecksItsConfig(t *testing.T) {
	r := newRig(t)
	for _, tt := range []struct {
		name string
		cfg  reaper.Config
		want string
	}{
		{"no registry", reaper.Config{}, "registry"},
		{"a provider without a stage", reaper.Config{Registry: r.st, Providers: []sandbox.Inventory{r.api}}, "stage"},
		{"negative lifetime", reaper.Config{Registry: r.st, Lifetime: -time.Second}, "lifetime"},
		{"negative deadline", reaper.Config{Registry: r.st, Deadline: -time.Second}, "deadline"},
		{"negative concurrency", reaper.Config{Registry: r.st, KillConcurrency: -1}, "kill concurrency"},
	} {
		if _, err := reaper.New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want an error naming the %s", tt.name, err, tt.want)
		}
	}
	if _, err := reaper.New(reaper.Config{Registry: r.st}); err != nil {
		t.Errorf("the registry alone (the local stack without sessions): %v", err)
	}
}
