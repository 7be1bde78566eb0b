package tracing

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
	//lint:ignore SA1019 otelaws was deprecated (contrib PR #9707, 2026-09: no owner left) and v0.72.0 is its last release; its successor, the SDK's own tracing through github.com/aws/smithy-go/tracing/smithyoteltracing, is not on this build's module proxy. Move to it when it is (docs/operations.md, "Tracing").
	"go.opentelemetry.io/contrib/instrumentation/github.com/aws/aws-sdk-go-v2/otelaws"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
)

// HTTPClient is a copy of c whose calls are client spans (otelhttp) and
// carry the trace context on (traceparent), e.g. to LiteLLM.
func HTTPClient(c *http.Client) *http.Client {
	out := *c
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	out.Transport = otelhttp.NewTransport(base)
	return &out
}

// InstrumentAWS adds client spans (otelaws: operation, table names,
// request id) to every call of the SDK clients built from cfg.
func InstrumentAWS(cfg *aws.Config) { otelaws.AppendMiddlewares(&cfg.APIOptions) }

// InstrumentAWSOptions is InstrumentAWS for one client's APIOptions
// (dynamodb.Options.APIOptions, ...), for a client built without an
// aws.Config (the local stack's).
func InstrumentAWSOptions(apiOptions *[]func(*middleware.Stack) error) {
	otelaws.AppendMiddlewares(apiOptions)
}
