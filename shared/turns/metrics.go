package turns

// The EMF metrics the turn function emits in metrics.Namespace, by name.
// The stack's dashboard searches these names (infra/cdk/stack,
// observability.go), so they are constants both use.
const (
	// MetricTurns counts finished turns, by Engine and Status; beside it,
	// TurnDuration, MetricTurnCost, ModelCalls and TurnsRefunded.
	MetricTurns    = "Turns"
	MetricTurnCost = "TurnCostMicros"
	// MetricTurnsFailed counts turns that did not succeed, by ErrorKind
	// (a closed set: runs.ErrorKind).
	MetricTurnsFailed = "TurnsFailed"
	// MetricResumptions counts runs taken over from a stopped attempt, by
	// Engine; MetricTurnsLeft attempts that left their run for another
	// (their invocation ending); MetricLostAttemptCost what lost attempts
	// may have cost beyond their record, estimated.
	MetricResumptions     = "TurnsResumed"
	MetricTurnsLeft       = "TurnsLeftForResume"
	MetricLostAttemptCost = "LostAttemptCostMicros"
	// MetricCeilingRefusals counts turns refused at the daily ceiling, by
	// Plan.
	MetricCeilingRefusals = "TurnsRefusedAtCeiling"
)
