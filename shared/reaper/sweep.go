package reaper

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/turns"
)

// Source names, in logs: each provider's list is named by its provider
// ("e2b list", "local list").
const (
	sourceRegistry = "live index"
	sourceRuns     = "open runs"
)

// candidate is one sandbox to kill.
type candidate struct {
	provider, id string
	// started is zero for a closed run's sandbox.
	started time.Time
	source  string
	runID   string
}

func (c candidate) key() string { return c.provider + "/" + c.id }

// sweep is one Sweep's state, shared by its sandbox and run halves.
type sweep struct {
	r     *Reaper
	ctx   context.Context
	now   time.Time
	kills chan struct{} // a slot per kill in flight

	mu      sync.Mutex
	rep     Report
	claimed map[string]bool // sandboxes taken for a kill (provider/id)
	errs    []error         // the sources' failures
}

// Sweep reads every source, kills the sandboxes past their lifetime and
// closes the abandoned runs, killing their sandboxes; the sandbox half
// and the run half run side by side, each within the sweep's deadline,
// sharing one bound on kills in flight. A source that fails is counted
// (SourceFailures) and the sweep goes on with the others. What the
// deadline (or ctx) leaves is counted (Left, RunsLeft) for the next
// sweep, without an error. Sweep fails only when no source at all could
// be read: then the schedule's failure alarm means something.
func (r *Reaper) sweep(ctx context.Context) (Report, error) {
	start := r.cfg.Now()
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Deadline)
	defer cancel()
	s := &sweep{r: r, ctx: ctx, now: start, kills: make(chan struct{}, r.cfg.KillConcurrency), claimed: map[string]bool{}}
	var halves sync.WaitGroup
	halves.Go(s.sandboxes)
	if r.cfg.Runs != nil {
		halves.Go(s.runs)
	}
	halves.Wait()

	s.mu.Lock()
	rep := s.rep
	errs := s.errs
	s.mu.Unlock()
	rep.Cut = ctx.Err() != nil
	rep.Elapsed = r.cfg.Now().Sub(start)
	r.emit(ctx, rep)
	if rep.SourcesRead == 0 {
		return rep, fmt.Errorf("reaper: no source could be read: %w", errors.Join(errs...))
	}
	return rep, nil
}

// update changes the report under the lock.
func (s *sweep) update(f func(*Report)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.rep)
}

// source accounts for one source's read: read when it gave anything
// (a page, a record, a run) or ended without error; failed when it
// ended with an error, the deadline's included, so a source read in
// part counts as both.
func (s *sweep) source(name string, err error, gotAny bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil || gotAny {
		s.rep.SourcesRead++
	}
	if err == nil {
		return
	}
	s.rep.SourceFailures++
	s.errs = append(s.errs, fmt.Errorf("%s: %w", name, err))
	if s.ctx.Err() != nil {
		s.r.cfg.Log.WarnContext(s.ctx, "reaper source cut by the sweep's deadline", "source", name, "err", err)
		return
	}
	s.r.cfg.Log.ErrorContext(s.ctx, "reaper source failed", "source", name, "err", err)
}

// sandboxes reads the sources side by side (each provider's list, the
// live index), then kills what is past its lifetime, oldest first.
func (s *sweep) sandboxes() {
	cfg := s.r.cfg
	var (
		wg      sync.WaitGroup
		listed  = make([][]listedBy, len(cfg.Providers))
		pages   = make([]int, len(cfg.Providers))
		records []sandbox.Record
	)
	for i, p := range cfg.Providers {
		wg.Go(func() {
			var err error
			listed[i], pages[i], err = s.list(p)
			s.source(p.Provider()+" list", err, pages[i] > 0)
		})
	}
	wg.Go(func() {
		// Records expire Lifetime after creation (sandbox.NewRecord): the
		// bound finds those created before now - lifetime - grace.
		bound := s.now.Add(-cfg.Lifetime - cfg.Grace + sandbox.Lifetime)
		var err error
		records, err = eachShard(cfg.Registry.IndexShards(), func(shard int) ([]sandbox.Record, error) {
			return cfg.Registry.ExpiredSandboxes(s.ctx, shard, bound, int32(cfg.RecordLimit))
		})
		s.source(sourceRegistry, err, len(records) > 0)
	})
	wg.Wait()

	var found []candidate
	seen := map[string]bool{}
	add := func(c candidate) {
		if !Expired(c.started, s.now, cfg.Lifetime, cfg.Grace) || seen[c.key()] {
			return
		}
		seen[c.key()] = true
		found = append(found, c)
	}
	n, foreign := 0, 0
	for _, page := range listed {
		for _, l := range page {
			n++
			if l.Stage != cfg.Stage {
				foreign++
				continue
			}
			add(candidate{provider: l.provider, id: l.ID, started: l.StartedAt, source: l.provider + " list", runID: l.RunID})
		}
	}
	for _, rec := range records {
		add(candidate{provider: rec.Provider, id: rec.SandboxID, started: rec.CreatedAt, source: sourceRegistry, runID: rec.RunID})
	}
	slices.SortStableFunc(found, func(a, b candidate) int { return a.started.Compare(b.started) })
	s.update(func(r *Report) {
		r.Listed += n - foreign
		for _, p := range pages {
			r.Pages += p
		}
		r.Foreign += foreign
		r.Recorded += len(records)
		r.Expired += len(found)
	})

	var kills sync.WaitGroup
	for _, c := range found {
		if !s.claim(c) {
			continue // a closed run's sandbox, taken by the run half
		}
		select {
		case s.kills <- struct{}{}:
		case <-s.ctx.Done():
			s.update(func(r *Report) { r.Left++ })
			continue
		}
		kills.Go(func() {
			defer func() { <-s.kills }()
			s.kill(c)
		})
	}
	kills.Wait()
}

// listedBy is a listed sandbox with the provider that listed it.
type listedBy struct {
	sandbox.Listed
	provider string
}

// list reads every page of a provider's list of this stage's sandboxes,
// without killing while it pages (a kill would shift the pages after
// it); each sandbox once, however the list shifts between pages. With an
// error it returns what the pages before it listed.
func (s *sweep) list(p sandbox.Inventory) ([]listedBy, int, error) {
	var all []listedBy
	ids := map[string]bool{}
	pages := 0
	for page, err := range p.ListSandboxes(s.ctx, s.r.cfg.Stage) {
		if err != nil {
			return all, pages, err
		}
		pages++
		for _, l := range page {
			if !ids[l.ID] {
				ids[l.ID] = true
				all = append(all, listedBy{l, p.Provider()})
			}
		}
	}
	return all, pages, nil
}

// claim takes a sandbox for a kill; false when another source's copy of
// it was taken already.
func (s *sweep) claim(c candidate) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.claimed[c.key()] {
		return false
	}
	s.claimed[c.key()] = true
	return true
}

// kill kills one sandbox with its provider and marks its record killed.
// A sandbox already gone is killed too, as far as we are concerned.
func (s *sweep) kill(c candidate) {
	cfg := s.r.cfg
	log := cfg.Log.With("sandboxId", c.id, "provider", c.provider, "source", c.source, "runId", c.runID)
	killer := s.r.killers[c.provider]
	if killer == nil {
		// A record of a provider this reaper cannot reach (a misconfigured
		// deployment): said every sweep, until someone looks.
		log.ErrorContext(s.ctx, "sandbox past its lifetime, but no provider to kill it here")
		s.update(func(r *Report) { r.KillFailures++ })
		return
	}
	if s.ctx.Err() != nil {
		s.update(func(r *Report) { r.Left++ })
		return
	}
	found, err := killer.KillSandbox(s.ctx, c.id)
	if err != nil {
		if s.ctx.Err() != nil {
			s.update(func(r *Report) { r.Left++ })
			return
		}
		log.WarnContext(s.ctx, "sandbox kill failed; the next sweep retries", "err", err)
		s.update(func(r *Report) { r.KillFailures++ })
		return
	}
	if found {
		if c.started.IsZero() {
			log.InfoContext(s.ctx, "sandbox killed")
		} else {
			log.InfoContext(s.ctx, "sandbox killed", "age", s.now.Sub(c.started).Round(time.Second).String())
		}
	}
	// Detached: a sandbox killed just before the deadline is still
	// recorded killed.
	mctx, cancel := context.WithTimeout(context.WithoutCancel(s.ctx), markTimeout)
	defer cancel()
	marked, merr := cfg.Registry.MarkSandboxKilled(mctx, c.id, cfg.Now())
	if merr != nil {
		log.WarnContext(s.ctx, "sandbox killed but its record not marked; the next sweep marks it", "err", merr)
	}
	s.update(func(r *Report) {
		if found {
			r.Killed++
		} else {
			r.AlreadyGone++
		}
		switch {
		case merr != nil:
			r.MarkFailures++
		case marked:
			r.Marked++
		}
	})
}

// runs reads the open runs of every shard old enough to need a look,
// RunConcurrency at a time: it re-dispatches those whose worker stopped
// with attempts left, closes those past resuming and kills the sandboxes
// of each run it closed.
func (s *sweep) runs() {
	cfg := s.r.cfg
	open, err := eachShard(cfg.Runs.Shards(), func(shard int) ([]turns.OpenRun, error) {
		return cfg.Runs.Abandoned(s.ctx, shard, cfg.RunLimit)
	})
	// Oldest first across the shards, as within each.
	slices.SortStableFunc(open, func(a, b turns.OpenRun) int { return a.Since.Compare(b.Since) })
	s.source(sourceRuns, err, len(open) > 0)
	s.update(func(r *Report) { r.RunsAbandoned += len(open) })
	slots := make(chan struct{}, cfg.RunConcurrency)
	var wg sync.WaitGroup
	for _, o := range open {
		select {
		case slots <- struct{}{}:
		case <-s.ctx.Done():
			s.update(func(r *Report) { r.RunsLeft++ })
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			s.interrupt(o.RunID)
		})
	}
	wg.Wait()
}

// interrupt closes one run and kills its sandboxes, whatever their age:
// the run is over, nothing may use them any more.
func (s *sweep) interrupt(runID string) {
	cfg := s.r.cfg
	if s.ctx.Err() != nil {
		s.update(func(r *Report) { r.RunsLeft++ })
		return
	}
	res, err := cfg.Runs.Interrupt(s.ctx, runID)
	switch {
	case err != nil && s.ctx.Err() != nil:
		s.update(func(r *Report) { r.RunsLeft++ })
		return
	case err != nil:
		cfg.Log.ErrorContext(s.ctx, "abandoned run not closed; the next sweep retries", "runId", runID, "err", err)
		s.update(func(r *Report) { r.RunFailures++ })
		return
	case res.Redispatched:
		s.update(func(r *Report) { r.RunsRedispatched++ })
		return
	case !res.Closed:
		s.update(func(r *Report) { r.RunsAlreadyClosed++ })
		return
	}
	s.update(func(r *Report) {
		r.RunsInterrupted++
		if res.Refunded {
			r.RunsRefunded++
		}
		r.InterruptedCostMicros += res.CostMicros
	})
	for _, ref := range res.Sandboxes {
		c := candidate{provider: ref.Provider, id: ref.SandboxID, source: sourceRuns, runID: runID}
		if !s.claim(c) {
			continue // killed by the sandbox half already
		}
		s.update(func(r *Report) { r.RunSandboxes++ })
		select {
		case s.kills <- struct{}{}:
		case <-s.ctx.Done():
			s.update(func(r *Report) { r.Left++ })
			continue
		}
		s.kill(c)
		<-s.kills
	}
}
