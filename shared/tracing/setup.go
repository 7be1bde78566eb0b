package tracing

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace/noop"
)

// Config says where a function's spans go. The zero value is off: no
// provider, every span a no-op.
type Config struct {
	// ServiceName is the resource's service.name unless OTEL_SERVICE_NAME
	// says otherwise.
	ServiceName string
	// File, when set, receives each kept span as one JSON line (the
	// stdout exporter's format): TRACES_FILE.
	File string
	// XRay, when set, sends spans to X-Ray's OTLP endpoint (TRACES_XRAY).
	XRay *XRay
	// OTLP, when set, sends spans to that OTLP/HTTP collector (what the
	// OTEL_EXPORTER_OTLP_* variables name).
	OTLP *OTLP
	// Exporter, when set, is used as is (tests, benchmarks).
	Exporter sdktrace.SpanExporter
	// ExportDelay is the longest a kept span waits for its export where
	// nothing flushes (the local stack's TRACES_FILE: a turn's spans
	// within a second of its end); zero is the batch span processor's
	// 5 s. A Lambda invocation flushes its spans at its end either way.
	ExportDelay time.Duration
	// SampleRatio is the share of turns that did not fail whose traces are
	// kept, from 0 to 1; every trace with a failed span is kept. Zero
	// keeps only failures.
	SampleRatio float64
	// CaptureContent puts prompts, answers and tool arguments and results
	// into spans, scrubbed of the secrets (TRACES_CAPTURE_CONTENT).
	CaptureContent bool
	// Attributes are added to the resource (faas.name, cloud.region).
	Attributes []attribute.KeyValue
}

// Enabled reports whether spans go anywhere.
func (c Config) Enabled() bool {
	return c.File != "" || c.XRay != nil || c.OTLP != nil || c.Exporter != nil
}

// The variables ConfigFromEnv reads besides the exporter's own OTEL_*.
const (
	EnvFile        = "TRACES_FILE"
	EnvXRay        = "TRACES_XRAY"
	EnvSampleRatio = "TRACES_SAMPLE_RATIO"
	EnvCapture     = "TRACES_CAPTURE_CONTENT"
)

// Variables are what ConfigFromEnv reads (each function's app.Variables
// lists them).
var Variables = append([]string{EnvFile, EnvXRay, EnvSampleRatio, EnvCapture,
	"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG"}, otlpVariableNames()...)

// otlpVariableNames are the OTEL_EXPORTER_OTLP_* variables otlpFromEnv
// reads.
func otlpVariableNames() []string {
	var names []string
	for _, v := range otlpVariables {
		names = append(names, "OTEL_EXPORTER_OTLP_"+v, "OTEL_EXPORTER_OTLP_TRACES_"+v)
	}
	return names
}

// ConfigFromEnv reads the tracing configuration:
//
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none: off.
//   - TRACES_FILE=path: one JSON line per kept span, appended to path.
//   - TRACES_XRAY=true: X-Ray's OTLP endpoint in AWS_REGION, signed
//     with xray's credentials (nil refuses).
//   - OTEL_TRACES_EXPORTER=otlp, or an OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT:
//     OTLP over HTTP (protobuf) as the OTEL_EXPORTER_OTLP_(TRACES_)*
//     variables say: ENDPOINT, HEADERS, TIMEOUT, COMPRESSION, PROTOCOL
//     (http/protobuf only), CERTIFICATE, CLIENT_CERTIFICATE, CLIENT_KEY.
//   - TRACES_SAMPLE_RATIO (default 1), else OTEL_TRACES_SAMPLER_ARG with
//     a (parentbased_)traceidratio OTEL_TRACES_SAMPLER: the share of
//     turns that did not fail kept.
//   - TRACES_CAPTURE_CONTENT=true: content in spans, scrubbed.
func ConfigFromEnv(getenv func(string) string, service string, xray *XRay) (Config, error) {
	cfg := Config{ServiceName: service, SampleRatio: 1}
	var errs []error
	if b, err := envBool(getenv, "OTEL_SDK_DISABLED"); err != nil || b {
		return Config{}, err
	}
	exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")))
	if exporter == "none" {
		return Config{}, nil
	}
	cfg.File = strings.TrimSpace(getenv(EnvFile))
	if on, err := envBool(getenv, EnvXRay); err != nil {
		errs = append(errs, err)
	} else if on {
		if xray == nil {
			errs = append(errs, errors.New("tracing: TRACES_XRAY is on but no AWS credentials were given"))
		} else {
			if xray.Region == "" {
				xray.Region = getenv("AWS_REGION")
			}
			if err := xray.check(); err != nil {
				errs = append(errs, err)
			}
			cfg.XRay = xray
		}
	}
	switch exporter {
	case "", "otlp":
		if exporter == "otlp" || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "" {
			c, err := otlpFromEnv(getenv)
			errs = append(errs, err)
			cfg.OTLP = c
		}
	case "console":
		errs = append(errs, errors.New("tracing: OTEL_TRACES_EXPORTER=console is not supported: stdout carries the logs and EMF; use TRACES_FILE"))
	default:
		errs = append(errs, fmt.Errorf("tracing: OTEL_TRACES_EXPORTER=%q is not supported (otlp or none)", exporter))
	}
	ratio, src := getenv(EnvSampleRatio), EnvSampleRatio
	if ratio == "" && strings.HasSuffix(getenv("OTEL_TRACES_SAMPLER"), "traceidratio") {
		ratio, src = getenv("OTEL_TRACES_SAMPLER_ARG"), "OTEL_TRACES_SAMPLER_ARG"
	}
	if ratio != "" {
		r, err := strconv.ParseFloat(ratio, 64)
		if err != nil || r < 0 || r > 1 {
			errs = append(errs, fmt.Errorf("tracing: %s=%q: want a share from 0 to 1", src, ratio))
		}
		cfg.SampleRatio = r
	}
	if b, err := envBool(getenv, EnvCapture); err != nil {
		errs = append(errs, err)
	} else {
		cfg.CaptureContent = b
	}
	if name := getenv("AWS_LAMBDA_FUNCTION_NAME"); name != "" {
		cfg.Attributes = append(cfg.Attributes, semconv.CloudProviderAWS, semconv.FaaSName(name), semconv.CloudRegion(getenv("AWS_REGION")))
	}
	return cfg, errors.Join(errs...)
}

func envBool(getenv func(string) string, name string) (bool, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("tracing: %s=%q: want true or false", name, v)
	}
	return b, nil
}

// Provider is a function's tracer provider, built once per container.
type Provider struct {
	tp    *sdktrace.TracerProvider // nil when off
	scrub *scrubber
	file  io.Closer
	once  sync.Once
	// after, when set, exports each invocation's spans after its
	// response (afterresponse.go).
	after *afterResponse
}

// Setup builds the provider cfg describes and makes it (and the W3C
// propagator) global, so every instrumented part uses it; off, it leaves
// the global no-op provider and returns a provider whose methods do
// nothing.
func Setup(ctx context.Context, cfg Config) (*Provider, error) {
	p := &Provider{scrub: &scrubber{capture: cfg.CaptureContent}}
	if !cfg.Enabled() {
		captured.Store(nil)
		return p, nil
	}
	var exps []sdktrace.SpanExporter
	if cfg.Exporter != nil {
		exps = append(exps, cfg.Exporter)
	}
	if cfg.File != "" {
		f, err := os.OpenFile(cfg.File, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("tracing: %s: %w", EnvFile, err)
		}
		p.file = f
		exp, err := stdouttrace.New(stdouttrace.WithWriter(f))
		if err != nil {
			return nil, err
		}
		exps = append(exps, exp)
	}
	if cfg.OTLP != nil {
		exp, err := newOTLPExporter(ctx, *cfg.OTLP, nil)
		if err != nil {
			return nil, err
		}
		exps = append(exps, exp)
	}
	if cfg.XRay != nil {
		exp, err := newOTLPExporter(ctx, OTLP{Endpoint: cfg.XRay.endpointURL(), Timeout: FlushTimeout}, cfg.XRay.client())
		if err != nil {
			return nil, fmt.Errorf("tracing: X-Ray exporter: %w", err)
		}
		exps = append(exps, exp)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName)),
		resource.WithAttributes(cfg.Attributes...),
		resource.WithFromEnv(), // OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample())}
	// One tail sampler decides and scrubs each span once; every exporter
	// has the SDK's batch span processor of its own, which each Lambda
	// invocation flushes (WithFlush).
	var bspOpts []sdktrace.BatchSpanProcessorOption
	if cfg.ExportDelay > 0 {
		bspOpts = append(bspOpts, sdktrace.WithBatchTimeout(cfg.ExportDelay))
	}
	batchers := make(fanOut, len(exps))
	for i, exp := range exps {
		batchers[i] = sdktrace.NewBatchSpanProcessor(exp, bspOpts...)
	}
	var next sdktrace.SpanProcessor = batchers
	if len(batchers) == 1 {
		next = batchers[0]
	}
	opts = append(opts, sdktrace.WithSpanProcessor(newTailSampler(next, cfg.SampleRatio, p.scrub)))
	p.tp = sdktrace.NewTracerProvider(opts...)
	otel.SetTracerProvider(p.tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	if cfg.CaptureContent {
		captured.Store(p.scrub)
	} else {
		captured.Store(nil)
	}
	return p, nil
}

// Enabled reports whether spans go anywhere.
func (p *Provider) Enabled() bool { return p != nil && p.tp != nil }

// ScrubSecrets sets the secrets every exported span is scrubbed of (the
// same list the log scrubber gets).
func (p *Provider) ScrubSecrets(secrets ...string) {
	if p != nil {
		p.scrub.set(secrets...)
	}
}

// Flush exports every kept span now: at the end of each Lambda
// invocation, before the environment freezes.
func (p *Provider) Flush(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	return p.tp.ForceFlush(ctx)
}

// Shutdown flushes and stops the provider; the global provider becomes a
// no-op again.
func (p *Provider) Shutdown(ctx context.Context) error {
	if !p.Enabled() {
		return nil
	}
	var err error
	p.once.Do(func() {
		err = p.tp.Shutdown(ctx)
		otel.SetTracerProvider(noop.NewTracerProvider())
		captured.Store(nil)
		if p.file != nil {
			err = errors.Join(err, p.file.Close())
		}
	})
	return err
}

// FlushTimeout bounds the flush at the end of an invocation, and each
// X-Ray export with its retries.
const FlushTimeout = 2 * time.Second

// WithFlush wraps a Lambda handler so that each invocation's kept spans
// are exported before Lambda freezes the environment: by the traces
// extension once the response is out (ForFunction registers it), else
// before the handler returns. Off, h is returned as is.
func WithFlush[E, R any](p *Provider, log *slog.Logger, h func(context.Context, E) (R, error)) func(context.Context, E) (R, error) {
	if !p.Enabled() {
		return h
	}
	return func(ctx context.Context, ev E) (R, error) {
		p.invocationStart()
		defer p.invocationDone(ctx, log)
		return h(ctx, ev)
	}
}

// WithFlushHTTP is WithFlush for an http.Handler (a function URL's,
// served by lambdaurl): the spans go after the response, before the
// environment freezes.
func WithFlushHTTP(p *Provider, log *slog.Logger, h http.Handler) http.Handler {
	if !p.Enabled() {
		return h
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.invocationStart()
		defer p.invocationDone(r.Context(), log)
		h.ServeHTTP(w, r)
	})
}

// flushBounded exports the kept spans within FlushTimeout: an exporter
// that cannot reach its endpoint must not hold the invocation (the span
// batch is dropped instead).
func (p *Provider) flushBounded(ctx context.Context, log *slog.Logger) {
	fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), FlushTimeout)
	defer cancel()
	if err := p.Flush(fctx); err != nil {
		log.WarnContext(ctx, "traces not exported", "err", err)
	}
}

// fanOut hands each kept span to several processors (one batcher per
// exporter: a file and a collector locally).
type fanOut []sdktrace.SpanProcessor

var _ sdktrace.SpanProcessor = fanOut(nil)

func (f fanOut) OnStart(context.Context, sdktrace.ReadWriteSpan) {}

func (f fanOut) OnEnd(s sdktrace.ReadOnlySpan) {
	for _, p := range f {
		p.OnEnd(s)
	}
}

func (f fanOut) ForceFlush(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.ForceFlush(ctx))
	}
	return errors.Join(errs...)
}

func (f fanOut) Shutdown(ctx context.Context) error {
	var errs []error
	for _, p := range f {
		errs = append(errs, p.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
