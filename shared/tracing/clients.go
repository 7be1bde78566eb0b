package tracing

import (
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"
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

// InstrumentAWS adds client spans (addAWSSpans: operation, table names,
// request id) to every call of the SDK clients built from cfg.
func InstrumentAWS(cfg *aws.Config) { InstrumentAWSOptions(&cfg.APIOptions) }

// InstrumentAWSOptions is InstrumentAWS for one client's APIOptions
// (dynamodb.Options.APIOptions, ...), for a client built without an
// aws.Config (the local stack's).
func InstrumentAWSOptions(apiOptions *[]func(*middleware.Stack) error) {
	*apiOptions = append(*apiOptions, addAWSSpans)
}
