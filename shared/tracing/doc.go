// Package tracing is the runtime's OpenTelemetry tracing: the tracer
// provider each function builds once (setup.go: a JSON-lines file
// locally, OTLP to X-Ray on AWS, any OTLP collector through the OTEL_*
// variables, a no-op when off), the sampling that keeps every failed turn
// and a share of the rest (tail.go), the scrubbing of every exported span
// (scrub.go), OpenTelemetry's maintained OTLP/HTTP exporter configured
// from the OTEL_EXPORTER_OTLP_* variables or for X-Ray (otlp_export.go,
// otlp_env.go, xray.go) behind the SDK's batch span processor, the export
// after each invocation's response (afterresponse.go: the traces
// extension in Lambda), the AWS SDK's and HTTP clients' client spans (awsspans.go,
// clients.go), the attributes of a turn, a model call and a tool call
// (run.go, genai.go), the context carried across the asynchronous
// dispatch (carrier.go) and the trace id on log lines (log.go).
//
// Instrumented code takes its tracer from the global provider, as
// OpenTelemetry's own instrumentation does: with no provider set up every
// span is a no-op.
package tracing
