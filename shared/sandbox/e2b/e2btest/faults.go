package e2btest

import (
	"fmt"
	"maps"
	"time"
)

// What the reaper's tests need beyond the code tool's: sandboxes that
// another client created earlier (Seed), list pages and kills that fail,
// hooks between a sweep's calls, and the calls counted.

// Seeded describes a sandbox to add as if created earlier, by us or by
// another deployment.
type Seeded struct {
	// ID defaults to a fresh one.
	ID        string
	StartedAt time.Time
	// EndAt defaults to StartedAt + 180 s; a later one is a timeout
	// extended (by mistake) with POST /sandboxes/{id}/timeout.
	EndAt    time.Time
	Metadata map[string]string
}

// Seed adds a running sandbox and returns its id. One whose EndAt has
// passed at the fake's clock is gone at the next call, as in E2B.
func (f *Fake) Seed(s Seeded) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seq++
	if s.ID == "" {
		s.ID = fmt.Sprintf("sbx%03d%s", f.seq, randomToken()[:8])
	}
	if s.EndAt.IsZero() {
		s.EndAt = s.StartedAt.Add(180 * time.Second)
	}
	f.sandboxes[s.ID] = &fakeSandbox{
		seq: f.seq, id: s.ID, templateID: "code-interpreter-v1", startedAt: s.StartedAt, endAt: s.EndAt,
		metadata: maps.Clone(s.Metadata), secure: true, envdToken: randomToken(), dead: make(chan struct{}),
	}
	return s.ID
}

type listFault struct {
	after  int // successful list calls still to serve first
	status int
}

// FailListAfter makes one list call fail with status after ok more
// successful ones: FailListAfter(1, 500) serves a first page and fails
// the second.
func (f *Fake) FailListAfter(ok, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listFaults = append(f.listFaults, listFault{after: ok, status: status})
}

// listFault reports the status the current list call must fail with, if
// any. Caller holds f.mu.
func (f *Fake) takeListFault() int {
	status := 0
	kept := f.listFaults[:0]
	for _, lf := range f.listFaults {
		switch {
		case lf.after == 0 && status == 0:
			status = lf.status
		case lf.after > 0:
			lf.after--
			kept = append(kept, lf)
		default:
			kept = append(kept, lf)
		}
	}
	f.listFaults = kept
	return status
}

// FailKill makes the next kill of id answer status. A 404 also removes
// the sandbox (it died by itself between the list and the kill); any
// other status leaves it running.
func (f *Fake) FailKill(id string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.killFaults[id] = status
}

// BeforeList runs fn before each list call is served, with the call's
// number (1 for the first): a test creates or removes sandboxes there to
// shift the list between pages. nil removes the hook.
func (f *Fake) BeforeList(fn func(n int)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeList = fn
}

// BeforeKill runs fn before each kill is served. nil removes the hook.
func (f *Fake) BeforeKill(fn func(id string)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.beforeKill = fn
}

// Call patterns counted by Calls.
const (
	CallCreate  = "POST /sandboxes"
	CallList    = "GET /v2/sandboxes"
	CallKill    = "DELETE /sandboxes/{id}"
	CallTimeout = "POST /sandboxes/{id}/timeout"
)

// Calls counts the API calls received, by route pattern (CallList, …).
func (f *Fake) Calls() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.calls)
}
