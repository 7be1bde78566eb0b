// Package durableobject is the Durable Object engine: it forwards turns to
// the older Cloudflare runtime, kept as the fallback until the native
// engine reaches parity, and accounts for them like native turns.
//
// # Wire
//
//	POST {DO_RUNTIME_URL}/agents/{agentName}/{instanceId}/turns
//	Authorization: Bearer {DO_RUNTIME_TOKEN}
//	{"runId", "userId", "podId", "message", "trigger"}
//	2xx {"finalMessage", "usage": {"model", "promptTokens", "cachedPromptTokens", "completionTokens"}}
//
// Unreachable, timed out or not 2xx: the run fails fallback_error and the
// turn is refunded. Nothing ever falls back to another engine.
package durableobject

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/turns"
)

// DefaultTimeout bounds one forwarded turn unless Config says otherwise.
const DefaultTimeout = 10 * time.Second

// maxResponseBytes bounds what is read from the runtime.
const maxResponseBytes = 1 << 20

// maxFinalMessage bounds the stored answer (runes).
const maxFinalMessage = 32000

// Pricer prices the model usage the runtime reports. *pricing.Table
// implements it.
type Pricer interface {
	ModelCost(model string, at time.Time, u llm.Usage) (money.Micros, error)
	Version() string
}

// Config configures the engine. Zero values are the documented defaults;
// New refuses what the engine cannot run with.
type Config struct {
	// BaseURL is DO_RUNTIME_URL, an http(s) URL; required.
	BaseURL string
	// Token is DO_RUNTIME_TOKEN, sent as a bearer token; required.
	Token string
	// Prices prices the usage the runtime reports; required.
	Prices Pricer
	// DefaultModel prices a turn whose reported model has no price, so a
	// fallback turn is never silently free; required.
	DefaultModel string
	// Timeout bounds one forwarded turn; zero means DefaultTimeout.
	Timeout time.Duration
	// HTTPClient nil means a plain client (Timeout bounds each turn).
	HTTPClient *http.Client
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets one line per failed turn; nil means slog.Default().
	Log *slog.Logger
}

// Engine is the Durable Object engine, a turns.Engine.
type Engine struct {
	cfg  Config
	base *url.URL
}

var _ turns.Engine = (*Engine)(nil)

// New checks cfg and fills its defaults.
func New(cfg Config) (*Engine, error) {
	var errs []error
	base, err := url.Parse(strings.TrimRight(cfg.BaseURL, "/"))
	if err != nil || !httpwire.IsHTTPURL(base) {
		errs = append(errs, errors.New("durableobject: the base URL must be an http(s) URL"))
	}
	if strings.TrimSpace(cfg.Token) == "" {
		errs = append(errs, errors.New("durableobject: a token is required"))
	}
	if cfg.Prices == nil {
		errs = append(errs, errors.New("durableobject: a pricer is required"))
	}
	if cfg.DefaultModel == "" {
		errs = append(errs, errors.New("durableobject: a default model is required"))
	}
	if cfg.Timeout < 0 {
		errs = append(errs, fmt.Errorf("durableobject: timeout %v is negative", cfg.Timeout))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Engine{cfg: cfg, base: base}, nil
}

type turnRequest struct {
	RunID   string `json:"runId"`
	UserID  string `json:"userId"`
	PodID   string `json:"podId"`
	Message string `json:"message"`
	Trigger string `json:"trigger"`
}

type turnResponse struct {
	FinalMessage string `json:"finalMessage"`
	Usage        *struct {
		Model              string `json:"model"`
		PromptTokens       int64  `json:"promptTokens"`
		CachedPromptTokens int64  `json:"cachedPromptTokens"`
		CompletionTokens   int64  `json:"completionTokens"`
	} `json:"usage"`
}

// Run forwards the turn and records its answer, usage and cost.
func (e *Engine) Run(ctx context.Context, t turns.EngineTurn) turns.EngineResult {
	r := t.Run
	start := e.cfg.Now()
	resp, err := e.call(ctx, r)
	elapsed := e.cfg.Now().Sub(start)
	if err != nil {
		e.cfg.Log.WarnContext(ctx, "fallback turn failed", "runId", r.RunID, "err", err, "elapsedMs", elapsed.Milliseconds())
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			r.End(runs.StatusInterrupted, runs.ErrInterrupted, "the turn was interrupted", e.cfg.Now())
		} else {
			r.End(runs.StatusFailed, runs.ErrFallback, "the durable object runtime failed: "+err.Error(), e.cfg.Now())
		}
		return turns.EngineResult{Infrastructure: true}
	}
	r.FinalMessage, _ = textcap.Head(resp.FinalMessage, maxFinalMessage)
	r.PostedToPod = true // the runtime posts to the pod itself
	if u := resp.Usage; u != nil {
		usage := llm.Usage{PromptTokens: u.PromptTokens, CachedPromptTokens: min(u.CachedPromptTokens, u.PromptTokens), CompletionTokens: u.CompletionTokens}
		model := u.Model
		cost, err := e.cfg.Prices.ModelCost(model, start, usage)
		if err != nil {
			e.cfg.Log.WarnContext(ctx, "fallback model has no price; priced as the default model", "runId", r.RunID, "model", model, "pricedAs", e.cfg.DefaultModel)
			cost, err = e.cfg.Prices.ModelCost(e.cfg.DefaultModel, start, usage)
		}
		if err != nil {
			r.End(runs.StatusFailed, runs.ErrConfig, "the turn's usage could not be priced", e.cfg.Now())
			return turns.EngineResult{}
		}
		r.Steps = append(r.Steps, runs.Step{
			Index: len(r.Steps), Model: model, PromptTokens: usage.PromptTokens, CachedPromptTokens: usage.CachedPromptTokens,
			CompletionTokens: usage.CompletionTokens, ElapsedMs: elapsed.Milliseconds(), CostMicros: cost,
		})
		r.Tokens.Add(usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens)
		r.AddCost(runs.Cost{ModelMicros: cost})
		r.Cost.PriceVersion = e.cfg.Prices.Version()
	}
	r.End(runs.StatusSucceeded, "", "", e.cfg.Now())
	return turns.EngineResult{}
}

// call forwards the turn. Its errors are short and safe to record on the
// run; an *httpwire.Error among them keeps the status and cause for the
// log.
func (e *Engine) call(ctx context.Context, r *runs.Run) (*turnResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	u, err := httpwire.JoinSegments(e.base, "agents", r.AgentName, r.InstanceID, "turns")
	if err != nil {
		return nil, fmt.Errorf("durable object runtime: bad request: %w", err)
	}
	var out turnResponse
	_, err = httpwire.Do(ctx, e.cfg.HTTPClient, httpwire.Request{
		Method: http.MethodPost, URL: u.String(), Bearer: e.cfg.Token,
		Body:     turnRequest{RunID: r.RunID, UserID: r.UserID, PodID: r.PodID, Message: r.Message, Trigger: r.Trigger},
		Out:      &out,
		MaxBytes: maxResponseBytes,
	})
	if herr, ok := errors.AsType[*httpwire.Error](err); ok {
		return nil, e.failure(herr)
	}
	if err != nil {
		return nil, err
	}
	return &out, nil
}

func (e *Engine) failure(err *httpwire.Error) error {
	switch err.Kind {
	case httpwire.KindContext:
		if errors.Is(err.Err, context.DeadlineExceeded) {
			return err.WithMessage(fmt.Sprintf("durable object runtime: no answer within %s", e.cfg.Timeout))
		}
		return err // cancelled: the turn was interrupted
	case httpwire.KindTransport:
		return err.WithMessage("durable object runtime: unreachable")
	case httpwire.KindStatus:
		return err.WithMessage(fmt.Sprintf("durable object runtime: status %d", err.Status))
	case httpwire.KindDecode:
		return err.WithMessage("durable object runtime: malformed response")
	}
	return err.WithMessage("durable object runtime: bad request")
}
