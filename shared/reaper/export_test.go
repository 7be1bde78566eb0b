package reaper

// MetricNames are every metric a sweep emits.
var MetricNames = []string{
	MetricSandboxesListed, MetricSandboxesExpired, MetricSandboxesKilled, MetricSandboxesAlreadyGone,
	MetricSandboxKillFailures, MetricSandboxesLeft, MetricSourceFailures, MetricRunsInterrupted, MetricRunsRedispatched,
	MetricRunsRefunded, MetricRunInterruptFailures, MetricSweepDuration,
}
