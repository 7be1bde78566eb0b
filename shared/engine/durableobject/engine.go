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
// Unreachable or not 2xx: the run fails fallback_error, an infrastructure
// failure (refunded by runs.RefundDue, as nothing answered here). No
// answer within the timeout, or a 2xx that cannot be read: the outcome is
// unknown (the runtime may have gone on, posted and spent), so the run
// fails without a refund and its cost is an estimated step. A 2xx without
// usage breaks the wire: it is logged as a contract violation and priced
// from the message sizes, marked estimated. Nothing ever falls back to
// another engine.
package durableobject

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/agent"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/turns"
)

// DefaultTimeout bounds one forwarded turn unless Config says otherwise:
// as long as a native turn may run (the loop's wall clock and the time it
// gives the answer's post), since the runtime runs the same kind of turn.
const DefaultTimeout = agent.DefaultMaxWall + agent.DefaultPostGrace

// MaxTimeout is the longest a forwarded turn may be waited for: the turn
// function's timeout (180 s, under the worker's limit on an open run)
// less the 5 s its final write is given.
const MaxTimeout = 175 * time.Second

// EnvTimeout names the variable of Config.Timeout.
const EnvTimeout = "DO_RUNTIME_TIMEOUT"

// ParseTimeout reads DO_RUNTIME_TIMEOUT: a Go duration ("90s") or whole
// seconds ("90"), in (0, MaxTimeout]; empty means DefaultTimeout.
func ParseTimeout(v string) (time.Duration, error) {
	return httpwire.ParseTimeout(EnvTimeout, v, DefaultTimeout, MaxTimeout)
}

// maxResponseBytes bounds what is read from the runtime.
const maxResponseBytes = 1 << 20

// maxFinalMessage bounds the stored answer (runes).
const maxFinalMessage = 32000

// Pricer prices the model usage the runtime reports. *pricing.Table
// implements it.
type Pricer interface {
	ModelCostParts(model string, at time.Time, u llm.Usage) (runs.Cost, error)
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
	// Timeout bounds one forwarded turn; zero means DefaultTimeout, and
	// it may not exceed MaxTimeout.
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
	if cfg.Timeout < 0 || cfg.Timeout > MaxTimeout {
		errs = append(errs, fmt.Errorf("durableobject: timeout %v is outside [0, %s]", cfg.Timeout, MaxTimeout))
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
	// MaxCostMicros is the run's reservation under the daily spend cap:
	// the most the runtime may spend on the turn. Absent without a cap.
	MaxCostMicros int64 `json:"maxCostMicros,omitempty"`
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
		return e.failed(ctx, r, err, start, elapsed)
	}
	r.FinalMessage, _ = textcap.Head(resp.FinalMessage, maxFinalMessage)
	r.PostedToPod = true // the runtime posts to the pod itself
	u := resp.Usage
	if u == nil {
		// The wire requires usage: without it the turn would be free.
		e.cfg.Log.ErrorContext(ctx, "durable object runtime contract violation: a 2xx answer without usage; cost estimated from the message sizes",
			"runId", r.RunID, "missing", "usage")
		usage := llm.Usage{
			PromptTokens:     agent.EstimateTokens(int64(len(r.Message))),
			CompletionTokens: agent.EstimateTokens(int64(len(resp.FinalMessage))),
		}
		if !e.charge(ctx, r, "", usage, start, elapsed, true) {
			return turns.EngineResult{}
		}
		r.End(runs.StatusSucceeded, "", "", e.cfg.Now())
		return turns.EngineResult{}
	}
	usage := llm.Usage{PromptTokens: u.PromptTokens, CachedPromptTokens: min(u.CachedPromptTokens, u.PromptTokens), CompletionTokens: u.CompletionTokens}
	if !e.charge(ctx, r, u.Model, usage, start, elapsed, false) {
		return turns.EngineResult{}
	}
	r.End(runs.StatusSucceeded, "", "", e.cfg.Now())
	return turns.EngineResult{}
}

// failed ends a turn the runtime did not answer usably. The words on the
// run are fixed; the cause (status, transport error) goes to the log.
func (e *Engine) failed(ctx context.Context, r *runs.Run, err error, start time.Time, elapsed time.Duration) turns.EngineResult {
	e.cfg.Log.WarnContext(ctx, "fallback turn failed", "runId", r.RunID, "err", err, "elapsedMs", elapsed.Milliseconds())
	herr, _ := errors.AsType[*httpwire.Error](err)
	if herr != nil && (herr.Kind == httpwire.KindContext || herr.Kind == httpwire.KindDecode) {
		// Sent, and no usable answer: the runtime may have run the turn
		// (it goes on when we stop waiting). An estimate of one call, the
		// message as its prompt and the output cap as its answer, stands
		// for what it may have spent, and nothing is refunded.
		usage := llm.Usage{PromptTokens: agent.EstimateTokens(int64(len(r.Message))), CompletionTokens: agent.DefaultMaxOutputTokens}
		if !e.charge(ctx, r, "", usage, start, elapsed, true) {
			return turns.EngineResult{}
		}
		switch {
		case herr.Kind == httpwire.KindDecode:
			r.End(runs.StatusFailed, runs.ErrFallback, "the durable object runtime answered with a response that could not be read; the turn may have run", e.cfg.Now())
		case ctx.Err() != nil && errors.Is(context.Cause(ctx), context.Canceled):
			r.End(runs.StatusInterrupted, runs.ErrInterrupted, "the turn was interrupted; the durable object runtime may have run it", e.cfg.Now())
		default:
			r.End(runs.StatusFailed, runs.ErrTimeout, fmt.Sprintf("the durable object runtime did not answer within %s; the turn may have run", e.cfg.Timeout), e.cfg.Now())
		}
		return turns.EngineResult{}
	}
	msg := "the durable object runtime could not be reached"
	switch {
	case herr != nil && herr.Kind == httpwire.KindStatus:
		msg = fmt.Sprintf("the durable object runtime refused the turn (status %d)", herr.Status)
	case herr == nil || herr.Kind == httpwire.KindRequest:
		msg = "the turn could not be sent to the durable object runtime"
	}
	r.End(runs.StatusFailed, runs.ErrFallback, msg, e.cfg.Now())
	return turns.EngineResult{Infrastructure: true}
}

// charge records the runtime's usage as a step, priced under its model
// or else the default one, so that a fallback turn is never silently
// free. When neither can price it the run fails as config, and charge
// reports false.
func (e *Engine) charge(ctx context.Context, r *runs.Run, model string, usage llm.Usage, start time.Time, elapsed time.Duration, estimated bool) bool {
	cost, err := e.cfg.Prices.ModelCostParts(model, start, usage)
	if err != nil {
		if model != "" {
			e.cfg.Log.WarnContext(ctx, "fallback model has no price; priced as the default model", "runId", r.RunID, "model", model, "pricedAs", e.cfg.DefaultModel)
		}
		cost, err = e.cfg.Prices.ModelCostParts(e.cfg.DefaultModel, start, usage)
	}
	if err != nil {
		r.End(runs.StatusFailed, runs.ErrConfig, "the turn's usage could not be priced", e.cfg.Now())
		return false
	}
	r.Model = cmp.Or(model, e.cfg.DefaultModel)
	r.Steps = append(r.Steps, runs.Step{
		Index: len(r.Steps), Model: r.Model, PromptTokens: usage.PromptTokens, CachedPromptTokens: usage.CachedPromptTokens,
		CompletionTokens: usage.CompletionTokens, ElapsedMs: elapsed.Milliseconds(), CostMicros: cost.ModelMicros, Estimated: estimated,
	})
	r.Tokens.Add(usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens)
	r.AddCost(cost)
	r.Cost.PriceVersion = e.cfg.Prices.Version()
	return true
}

// call forwards the turn. Its errors are short; an *httpwire.Error among
// them keeps the status and cause for the log.
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
		Body:     turnRequest{RunID: r.RunID, UserID: r.UserID, PodID: r.PodID, Message: r.Message, Trigger: r.Trigger, MaxCostMicros: int64(r.ReservedMicros)},
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
