package turns

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tracing"
)

// tracedStore gives the turn's own writes their spans: the admission
// (the ceiling and the run record in one transaction), the claim, each
// checkpoint and the final write. The DynamoDB calls under them are the
// SDK client spans (tracing.InstrumentAWS, wired where the client is built).
type tracedStore struct{ Store }

func traced(s Store) Store {
	if _, ok := s.(tracedStore); ok {
		return s
	}
	return tracedStore{s}
}

func (s tracedStore) Admit(ctx context.Context, a Admission) (AdmitResult, error) {
	ctx, span := tracing.Start(ctx, "turn.admit")
	defer span.End()
	res, err := s.Store.Admit(ctx, a)
	if !span.IsRecording() {
		return res, err
	}
	// Every attribute at the end, in one call (each call locks the span
	// and grows its attributes); the sampler decides at the trace's end.
	attrs := append(make([]attribute.KeyValue, 0, 9), tracing.RunStarted(a.Run)...)
	attrs = append(attrs, attribute.Bool("commonly.admit.admitted", res.Admitted), attribute.String("commonly.plan", string(a.Plan)),
		attribute.Int64("commonly.admit.limit", a.Limit))
	switch {
	case err != nil:
	case res.ReplayOf != "":
		attrs = append(attrs, attribute.String("commonly.admit.replay_of", res.ReplayOf))
	case res.CapRefused:
		attrs = append(attrs, attribute.String("commonly.admit.refused", "spend_cap"))
	case !res.Admitted && !res.PlanChanged:
		attrs = append(attrs, attribute.String("commonly.admit.refused", "ceiling"), attribute.Int64("commonly.admit.used", res.CeilingUsed))
	}
	span.SetAttributes(attrs...)
	if err != nil {
		tracing.Fail(span, "unavailable")
	}
	return res, err
}

func (s tracedStore) ClaimRun(ctx context.Context, runID string, at time.Time) (*runs.Run, error) {
	ctx, span := tracing.Start(ctx, "turn.claim")
	defer span.End()
	r, err := s.Store.ClaimRun(ctx, runID, at)
	// Not claimable is an outcome (a retried or late dispatch), not a
	// failure.
	if err == nil || errors.Is(err, ErrNotClaimable) {
		span.SetAttributes(tracing.RunID.String(runID), attribute.Bool("commonly.claim.claimed", err == nil))
	} else {
		span.SetAttributes(tracing.RunID.String(runID))
		tracing.Fail(span, "unavailable")
	}
	return r, err
}

func (s tracedStore) CheckpointRun(ctx context.Context, r *runs.Run, journal []JournalEntry) error {
	ctx, span := tracing.Start(ctx, "turn.checkpoint", trace.WithAttributes(tracing.RunID.String(r.RunID), tracing.Step.Int(len(r.Steps))))
	defer span.End()
	err := s.Store.CheckpointRun(ctx, r, journal)
	switch {
	case errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrAlreadyFinal) || errors.Is(err, ErrCancelled):
		span.SetAttributes(attribute.Bool("commonly.checkpoint.refused", true))
	case err != nil:
		tracing.Fail(span, "unavailable")
	}
	return err
}

func (s tracedStore) FinishRun(ctx context.Context, r *runs.Run, refund bool) error {
	ctx, span := tracing.Start(ctx, "turn.final_write", trace.WithAttributes(tracing.RunID.String(r.RunID),
		tracing.RunStatus.String(string(r.Status)), tracing.Refunded.Bool(refund)))
	defer span.End()
	err := s.Store.FinishRun(ctx, r, refund)
	switch {
	case errors.Is(err, ErrAlreadyFinal):
		span.SetAttributes(attribute.Bool("commonly.final_write.already_final", true))
	case err != nil:
		tracing.Fail(span, "unavailable")
	}
	return err
}

// Execute claims the run and runs it (execute) under the worker's span:
// the root of a dispatched turn's part of the trace (its parent is the
// API request's, carried in the dispatch event), with the run's outcome.
func (w *Worker) Execute(ctx context.Context, runID string) (*runs.Run, error) {
	ctx, span := tracing.Start(ctx, "turn.run")
	defer span.End()
	r, err := w.execute(ctx, runID)
	if err != nil {
		tracing.Fail(span, "final_write")
	}
	if r != nil {
		tracing.RunEnded(span, r) // the run's ids and outcome, in one call
	} else {
		span.SetAttributes(tracing.RunID.String(runID))
	}
	return r, err
}

// dispatchTraced is the dispatch under its span: inline, the whole turn;
// with Lambda, the asynchronous invoke that carries the trace on. The
// request's span (the trace's root) gets the run's ids and, when the turn
// ran inline, its outcome.
func (s *Service) dispatchTraced(ctx context.Context, run *runs.Run) (*runs.Run, error) {
	root := trace.SpanFromContext(ctx)
	dctx, span := tracing.Start(ctx, "turn.dispatch", trace.WithAttributes(tracing.RunID.String(run.RunID)))
	latest, err := s.dispatch.Dispatch(dctx, run)
	if err != nil {
		tracing.Fail(span, "dispatch")
	}
	span.End()
	if latest != nil && latest.Status.Final() {
		tracing.RunEnded(root, latest) // the run's ids and outcome, in one call
	} else {
		root.SetAttributes(tracing.RunStarted(run)...)
	}
	return latest, err
}
