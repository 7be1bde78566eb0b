// Package fallback forwards turns to the Durable Object runtime (the
// older Cloudflare engine), kept as the fallback until the native loop
// reaches parity, and accounts for them like native turns.
package fallback

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/textcap"
	"github.com/commonly/runtime/shared/turns"
)

// Timeout bounds one forwarded turn.
const Timeout = 10 * time.Second

// maxResponseBytes bounds what is read from the runtime.
const maxResponseBytes = 1 << 20

// maxFinalMessage bounds the stored answer (runes).
const maxFinalMessage = 32000

// pricer prices the model usage the runtime reports.
type pricer interface {
	ModelCost(model string, at time.Time, u llm.Usage) (money.Micros, error)
	Version() string
}

// Client is the Durable Object engine.
type Client struct {
	baseURL string
	token   string
	http    *http.Client
	prices  pricer
	// defaultModel prices a turn whose reported model has no price, so a
	// fallback turn is never silently free.
	defaultModel string
	now          func() time.Time
	log          *slog.Logger
	timeout      time.Duration
}

// WithTimeout returns a copy of the client with another per-turn timeout
// (tests shorten it).
func (c *Client) WithTimeout(d time.Duration) *Client {
	cp := *c
	cp.timeout = d
	return &cp
}

// New returns the engine. baseURL is DO_RUNTIME_URL, token DO_RUNTIME_TOKEN.
func New(baseURL, token string, hc *http.Client, prices pricer, defaultModel string, now func() time.Time, log *slog.Logger) *Client {
	if hc == nil {
		hc = &http.Client{}
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Client{baseURL: strings.TrimRight(baseURL, "/"), token: token, http: hc, prices: prices, defaultModel: defaultModel, now: now, log: log, timeout: Timeout}
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

// errFallback marks failures of the runtime; the detail stays in logs.
var errFallback = errors.New("durable object runtime")

// Run forwards the turn and records its answer, usage and cost.
func (c *Client) Run(ctx context.Context, t turns.EngineTurn) turns.EngineResult {
	r := t.Run
	start := c.now()
	resp, err := c.call(ctx, r)
	elapsed := c.now().Sub(start)
	if err != nil {
		c.log.WarnContext(ctx, "fallback turn failed", "runId", r.RunID, "err", err, "elapsedMs", elapsed.Milliseconds())
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			r.End(runs.StatusInterrupted, runs.ErrInterrupted, "the turn was interrupted", c.now())
		} else {
			r.End(runs.StatusFailed, runs.ErrFallback, "the durable object runtime failed: "+err.Error(), c.now())
		}
		// Nothing was produced: the turn is given back.
		return turns.EngineResult{Refund: true}
	}
	r.FinalMessage, _ = textcap.Head(resp.FinalMessage, maxFinalMessage)
	r.PostedToPod = true // the runtime posts to the pod itself
	if u := resp.Usage; u != nil {
		usage := llm.Usage{PromptTokens: u.PromptTokens, CachedPromptTokens: min(u.CachedPromptTokens, u.PromptTokens), CompletionTokens: u.CompletionTokens}
		model := u.Model
		cost, err := c.prices.ModelCost(model, start, usage)
		if err != nil {
			c.log.WarnContext(ctx, "fallback model has no price; priced as the default model", "runId", r.RunID, "model", model, "pricedAs", c.defaultModel)
			cost, err = c.prices.ModelCost(c.defaultModel, start, usage)
		}
		if err != nil {
			r.End(runs.StatusFailed, runs.ErrConfig, "the turn's usage could not be priced", c.now())
			return turns.EngineResult{}
		}
		r.Steps = append(r.Steps, runs.Step{
			Index: len(r.Steps), Model: model, PromptTokens: usage.PromptTokens, CachedPromptTokens: usage.CachedPromptTokens,
			CompletionTokens: usage.CompletionTokens, ElapsedMs: elapsed.Milliseconds(), CostMicros: cost,
		})
		r.Tokens.Add(usage.PromptTokens, usage.CachedPromptTokens, usage.CompletionTokens)
		r.AddCost(runs.Cost{ModelMicros: cost})
		r.Cost.PriceVersion = c.prices.Version()
	}
	r.End(runs.StatusSucceeded, "", "", c.now())
	return turns.EngineResult{}
}

func (c *Client) call(ctx context.Context, r *runs.Run) (*turnResponse, error) {
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	body, err := json.Marshal(turnRequest{RunID: r.RunID, UserID: r.UserID, PodID: r.PodID, Message: r.Message, Trigger: r.Trigger})
	if err != nil {
		return nil, err
	}
	u := c.baseURL + "/agents/" + url.PathEscape(r.AgentName) + "/" + url.PathEscape(r.InstanceID) + "/turns"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: bad request: %v", errFallback, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+c.token)
	res, err := c.http.Do(req)
	if err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%w: no answer within %s", errFallback, c.timeout)
		}
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: unreachable", errFallback)
	}
	defer res.Body.Close()
	if res.StatusCode < 200 || res.StatusCode > 299 {
		_, _ = io.Copy(io.Discard, io.LimitReader(res.Body, maxResponseBytes))
		return nil, fmt.Errorf("%w: status %d", errFallback, res.StatusCode)
	}
	var out turnResponse
	if err := json.NewDecoder(io.LimitReader(res.Body, maxResponseBytes)).Decode(&out); err != nil {
		if ctx.Err() == context.DeadlineExceeded {
			return nil, fmt.Errorf("%w: no answer within %s", errFallback, c.timeout)
		}
		return nil, fmt.Errorf("%w: malformed response", errFallback)
	}
	return &out, nil
}
