package reaper

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/tracing"
)

// Sweep runs one sweep (sweep) as a trace of its own, linked to the trace
// of each run it closes (the reclaimer adds the links), with the report's
// counts. A sweep that read no source fails its span.
func (r *Reaper) Sweep(ctx context.Context) (Report, error) {
	ctx, span := tracing.Start(ctx, "reaper.sweep", trace.WithNewRoot())
	defer span.End()
	rep, err := r.sweep(ctx)
	span.SetAttributes(
		attribute.Int("commonly.reaper.listed", rep.Listed), attribute.Int("commonly.reaper.expired", rep.Expired),
		attribute.Int("commonly.reaper.killed", rep.Killed), attribute.Int("commonly.reaper.kill_failures", rep.KillFailures),
		attribute.Int("commonly.reaper.source_failures", rep.SourceFailures),
		attribute.Int("commonly.reaper.runs_interrupted", rep.RunsInterrupted), attribute.Int("commonly.reaper.runs_refunded", rep.RunsRefunded),
	)
	if err != nil {
		tracing.Fail(span, "no_source")
	}
	return rep, err
}
