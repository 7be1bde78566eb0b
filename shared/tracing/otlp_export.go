package tracing

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// otlpRetry spaces the attempts of one batch: 100 ms doubling to 1 s
// (jittered by the exporter), retried on 429, 502, 503 and 504 (waiting
// at least the Retry-After) and on temporary transport errors, until the
// batch's timeout. The exporter's default starts at 5 s: longer than the
// 2 s an invocation's flush has.
func otlpRetry(timeout time.Duration) otlptracehttp.RetryConfig {
	return otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond, MaxInterval: time.Second, MaxElapsedTime: timeout}
}

// otlpMaxResponse bounds what is read of a collector's answer (the
// exporter's default is 4 MiB), and so the body an error carries.
const otlpMaxResponse = 64 << 10

// newOTLPExporter is OpenTelemetry's maintained OTLP/HTTP protobuf
// exporter sending to c. client, when set, sends the requests (X-Ray's
// signs them); else one with c's TLS files. Every setting is passed
// explicitly, so the exporter's own reading of OTEL_EXPORTER_OTLP_*
// changes nothing: otlpFromEnv has read and checked them for the
// collector, and none of a collector's headers reaches X-Ray.
func newOTLPExporter(ctx context.Context, c OTLP, client *http.Client) (sdktrace.SpanExporter, error) {
	if c.Endpoint == "" {
		return nil, errors.New("tracing: OTLP exporter without an endpoint")
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = defaultOTLPTimeout
	}
	if client == nil {
		tr, err := c.transport()
		if err != nil {
			return nil, err
		}
		client = &http.Client{Transport: tr, Timeout: timeout}
	}
	headers := c.Headers
	if headers == nil {
		headers = map[string]string{}
	}
	compression := otlptracehttp.NoCompression
	if c.Gzip {
		compression = otlptracehttp.GzipCompression
	}
	exp, err := otlptracehttp.New(ctx,
		otlptracehttp.WithEndpointURL(c.Endpoint),
		otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
		otlptracehttp.WithHeaders(headers),
		otlptracehttp.WithCompression(compression),
		otlptracehttp.WithTimeout(timeout),
		otlptracehttp.WithRetry(otlpRetry(timeout)),
		otlptracehttp.WithMaxResponseSize(otlpMaxResponse),
		otlptracehttp.WithHTTPClient(client),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	return exp, nil
}
