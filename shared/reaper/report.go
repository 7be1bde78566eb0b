package reaper

import (
	"context"
	"time"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/money"
)

// Report is what one sweep found and did.
type Report struct {
	// Listed counts the distinct sandboxes of this stage the providers
	// listed (E2B's list, every page; the local provider's sessions), in
	// Pages of the providers' lists. Foreign counts listed rows whose metadata is not
	// this stage's (a server ignoring the filter): never killed.
	Listed, Pages, Foreign int
	// Recorded counts the expired records read from the live index.
	Recorded int
	// Expired counts the distinct sandboxes past their lifetime, from
	// every source; RunSandboxes those of the runs closed (killed
	// whatever their age: their run is over).
	Expired, RunSandboxes int
	// Killed were alive and killed, AlreadyGone were gone by the kill
	// (404), KillFailures could not be killed (retried next sweep), Left
	// were not reached before the deadline.
	Killed, AlreadyGone, KillFailures, Left int
	// Marked records were marked killed by this sweep; MarkFailures could
	// not be (the next sweep finds them again, and marks them).
	Marked, MarkFailures int
	// SourcesRead and SourceFailures count the sources (E2B's list, the
	// live index, the local provider, the open runs) read and failed; a
	// source read in part is both.
	SourcesRead, SourceFailures int
	// RunsAbandoned were listed open turns.CheckAfter after their
	// admission and read; RunsRedispatched of them had a stopped worker
	// with attempts left and were dispatched again, for another attempt
	// to resume; RunsInterrupted were closed by this sweep (RunsRefunded
	// of them refunded, InterruptedCostMicros their cost, which the ledger
	// counts from the runs stream), RunsAlreadyClosed were final or still
	// their worker's, RunFailures could not be closed, RunsLeft were not
	// reached.
	RunsAbandoned, RunsRedispatched, RunsInterrupted, RunsRefunded, RunsAlreadyClosed, RunFailures, RunsLeft int
	InterruptedCostMicros                                                                                    money.Micros
	// Cut is set when the deadline (or the caller) ended the sweep early.
	Cut     bool
	Elapsed time.Duration
}

// Metric names of a sweep's EMF event, without dimensions (the names the
// CDK stack's dashboard and alarms read; infra/cdk/stack/observability.go).
const (
	MetricSandboxesListed      = "SandboxesListed"
	MetricSandboxesExpired     = "SandboxesExpired"
	MetricSandboxesKilled      = "SandboxesKilled"
	MetricSandboxesAlreadyGone = "SandboxesAlreadyGone"
	MetricSandboxKillFailures  = "SandboxKillFailures"
	MetricSandboxesLeft        = "SandboxesLeft"
	MetricSourceFailures       = "SourceFailures"
	MetricRunsInterrupted      = "RunsInterrupted"
	MetricRunsRedispatched     = "RunsRedispatched"
	MetricRunsRefunded         = "RunsRefunded"
	MetricRunInterruptFailures = "RunInterruptFailures"
	MetricSweepDuration        = "SweepDuration"
)

// emit writes the sweep's metrics and its one log line.
func (r *Reaper) emit(ctx context.Context, rep Report) {
	count := func(name string, v int) metrics.Metric {
		return metrics.Metric{Name: name, Unit: metrics.Count, Value: float64(v)}
	}
	r.cfg.Metrics.Emit(nil,
		count(MetricSandboxesListed, rep.Listed),
		count(MetricSandboxesExpired, rep.Expired),
		count(MetricSandboxesKilled, rep.Killed),
		count(MetricSandboxesAlreadyGone, rep.AlreadyGone),
		count(MetricSandboxKillFailures, rep.KillFailures),
		count(MetricSandboxesLeft, rep.Left),
		count(MetricSourceFailures, rep.SourceFailures),
		count(MetricRunsInterrupted, rep.RunsInterrupted),
		count(MetricRunsRedispatched, rep.RunsRedispatched),
		count(MetricRunsRefunded, rep.RunsRefunded),
		count(MetricRunInterruptFailures, rep.RunFailures),
		metrics.Metric{Name: MetricSweepDuration, Unit: metrics.Milliseconds, Value: float64(rep.Elapsed.Milliseconds())},
	)
	r.cfg.Log.InfoContext(ctx, "reaper sweep",
		"listed", rep.Listed, "pages", rep.Pages, "foreign", rep.Foreign, "recorded", rep.Recorded,
		"expired", rep.Expired, "runSandboxes", rep.RunSandboxes, "killed", rep.Killed, "alreadyGone", rep.AlreadyGone,
		"killFailures", rep.KillFailures, "left", rep.Left, "marked", rep.Marked, "markFailures", rep.MarkFailures,
		"sourcesRead", rep.SourcesRead, "sourceFailures", rep.SourceFailures,
		"runsAbandoned", rep.RunsAbandoned, "runsRedispatched", rep.RunsRedispatched, "runsInterrupted", rep.RunsInterrupted, "runsRefunded", rep.RunsRefunded,
		"runsAlreadyClosed", rep.RunsAlreadyClosed, "runFailures", rep.RunFailures, "runsLeft", rep.RunsLeft,
		"interruptedCostMicros", int64(rep.InterruptedCostMicros), "cut", rep.Cut, "elapsedMs", rep.Elapsed.Milliseconds())
}
