package sandbox

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/commonly/runtime/shared/tracing"
)

// Traced gives each sandbox create, code run and kill of p its span; the
// provider's HTTP calls under them are otelhttp's client spans. Code and
// its output never go into them.
func Traced(p Provider) Provider {
	if _, ok := p.(tracedProvider); ok || p == nil {
		return p
	}
	return tracedProvider{p}
}

type tracedProvider struct{ Provider }

func (p tracedProvider) Create(ctx context.Context, meta Meta) (Session, error) {
	ctx, span := tracing.Start(ctx, "sandbox.create", trace.WithAttributes(tracing.Sandbox.String(p.Name()), tracing.RunID.String(meta.RunID)))
	defer span.End()
	s, err := p.Provider.Create(ctx, meta)
	if err != nil {
		tracing.Fail(span, errorKind(err))
		return s, err
	}
	span.SetAttributes(tracing.SandboxID.String(s.ID()))
	return tracedSession{Session: s, provider: p.Name()}, nil
}

type tracedSession struct {
	Session
	provider string
}

func (s tracedSession) Execute(ctx context.Context, lang Language, code string) (Execution, error) {
	ctx, span := tracing.Start(ctx, "sandbox.run", trace.WithAttributes(tracing.Sandbox.String(s.provider), tracing.SandboxID.String(s.ID()),
		attribute.String("commonly.code.language", string(lang)), attribute.Int("commonly.code.bytes", len(code))))
	defer span.End()
	ex, err := s.Session.Execute(ctx, lang, code)
	switch {
	case err != nil:
		tracing.Fail(span, errorKind(err))
	case ex.Error != nil:
		// The code raised: the run worked, the code did not.
		span.SetAttributes(attribute.Bool("commonly.code.raised", true))
	}
	span.SetAttributes(attribute.Bool("commonly.code.truncated", ex.Truncated))
	return ex, err
}

func (s tracedSession) Kill(ctx context.Context) error {
	ctx, span := tracing.Start(ctx, "sandbox.kill", trace.WithAttributes(tracing.Sandbox.String(s.provider), tracing.SandboxID.String(s.ID())))
	defer span.End()
	err := s.Session.Kill(ctx)
	if err != nil {
		tracing.Fail(span, errorKind(err))
	}
	return err
}

// errorKind names a sandbox error by its sentinel, never its text.
func errorKind(err error) string {
	switch {
	case errors.Is(err, ErrTimeout):
		return "sandbox_timeout"
	case errors.Is(err, ErrLost):
		return "sandbox_lost"
	case errors.Is(err, ErrUnavailable):
		return "sandbox_unavailable"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	}
	return "sandbox_error"
}
