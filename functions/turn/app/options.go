package app

import (
	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/tools"
)

// Option changes what Build wires beyond the configuration: what a
// harness puts in place of a service (infra/localstack: the benchmarks'
// no-op tool, a poster that accepts every answer), so that it measures
// and tests this wiring, not a copy of it. A deployment passes none.
type Option func(*options)

type options struct {
	tools  []tools.Tool
	poster agent.Poster
}

// WithTools offers ts beside the built-in tools.
func WithTools(ts ...tools.Tool) Option {
	return func(o *options) { o.tools = append(o.tools, ts...) }
}

// WithPoster delivers final answers through p instead of the pod backend.
func WithPoster(p agent.Poster) Option {
	return func(o *options) { o.poster = p }
}
