// Package bench measures what a turn costs: the whole local turn path
// (API request, JWT authorizer, ceiling, run record, native loop, model
// client, DynamoDB through the real SDK) against a scripted model with
// zero think time, in-process with `go test -bench`, and side by side
// with the @openai/agents loop on the same script with `make bench`
// (cmd/benchdriver). See docs/benchmarks.md.
package bench
