// Package handler is the turn function's Lambda handler: it translates
// API Gateway HTTP API (v2) events and dispatch events into calls on the
// turn service, and results back into responses.
package handler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/functions/internal/problem"
	"github.com/commonly/runtime/shared/dispatch"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// Handler serves the turn function.
type Handler struct {
	svc    *turns.Service
	worker *turns.Worker
	log    *slog.Logger
}

// Config wires a Handler.
type Config struct {
	// Service serves the API; required.
	Service *turns.Service
	// Worker runs dispatched turns; required.
	Worker *turns.Worker
	// Log gets one line per request; nil means slog.Default().
	Log *slog.Logger
}

// New checks cfg and fills its defaults.
func New(cfg Config) (*Handler, error) {
	if cfg.Service == nil || cfg.Worker == nil {
		return nil, errors.New("handler: a turn service and a worker are required")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Handler{svc: cfg.Service, worker: cfg.Worker, log: cfg.Log}, nil
}

// Invoke is the Lambda entry point: one function serves the API and the
// dispatched turns, told apart by the payload's shape.
func (h *Handler) Invoke(ctx context.Context, payload json.RawMessage) (any, error) {
	var d dispatch.Event
	if err := json.Unmarshal(payload, &d); err == nil && d.Dispatch != nil {
		ctx, span := startDispatch(ctx, d.Dispatch)
		defer span.End()
		return h.HandleDispatch(ctx, d.Dispatch.RunID)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &req); err != nil || req.RequestContext.HTTP.Method == "" {
		// Not an event this function is wired to: fail the invocation
		// loudly rather than answer something API-shaped.
		return nil, errors.New("unrecognised event")
	}
	return h.HandleHTTP(ctx, req), nil
}

// DispatchResult is what a dispatch invocation returns.
type DispatchResult struct {
	RunID  string      `json:"runId"`
	Status runs.Status `json:"status"`
}

// HandleDispatch runs a dispatched turn. An error makes Lambda retry the
// invocation; the claim makes the retry harmless.
func (h *Handler) HandleDispatch(ctx context.Context, runID string) (*DispatchResult, error) {
	if runID == "" {
		return nil, errors.New("dispatch event without runId")
	}
	r, err := h.worker.Execute(ctx, runID)
	if err != nil {
		if errors.Is(err, turns.ErrLeaseHeld) || errors.Is(err, turns.ErrLeftForResume) {
			// Expected: the run is another worker's, or left for the next
			// attempt; the dispatch fails so that Lambda tries it again.
			h.log.InfoContext(ctx, "dispatch to be retried", "runId", runID, "reason", err)
		} else {
			h.log.ErrorContext(ctx, "dispatch failed", "runId", runID, "err", err)
		}
		return nil, fmt.Errorf("execute %s: %w", runID, err)
	}
	out := &DispatchResult{RunID: runID}
	if r != nil {
		out.Status = r.Status
	}
	return out, nil
}

// HandleHTTP serves one API request.
func (h *Handler) HandleHTTP(ctx context.Context, req events.APIGatewayV2HTTPRequest) (resp events.APIGatewayV2HTTPResponse) {
	start := time.Now()
	ctx, span := startRequest(ctx, &req)
	routeKey := req.RouteKey
	defer func() { endRequest(span, routeKey, resp.StatusCode) }()
	caller := callerFrom(&req)
	// A subject that breaks the id rule names no user: it could forge a
	// key ("u1#LEDGER") or mislead a log. It is refused below on every
	// route that needs an identity, and never logged as a user id.
	malformed := caller.ID != "" && (!tablekeys.ValidID(caller.ID) || rawSubjectMalformed(&req))
	if malformed {
		caller = turns.Caller{}
	}
	// requestId is Lambda's, added to every line by the lambdacontext
	// logger; API Gateway's id (the access log's requestId) is its own key.
	log := h.log.With("apiRequestId", req.RequestContext.RequestID, "userId", caller.ID, "route", req.RouteKey)
	defer func() {
		if p := recover(); p != nil {
			log.ErrorContext(ctx, "handler panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			resp = problemResponse(problemFor(errors.New("panic")))
		}
		log.InfoContext(ctx, "request", "status", resp.StatusCode, "elapsedMs", time.Since(start).Milliseconds())
	}()

	params := req.PathParameters
	if routeKey == "" || routeKey == "$default" {
		var ok, known bool
		routeKey, params, ok, known = MatchRoute(req.RequestContext.HTTP.Method, req.RawPath)
		if !ok {
			if known {
				return problemResponse(problem.MethodNotAllowed("this path does not accept " + req.RequestContext.HTTP.Method))
			}
			return problemResponse(problem.RouteNotFound("no route matches " + req.RawPath))
		}
	}
	rt, ok := lookupRoute(routeKey)
	if caller.ID == "" && (!ok || rt.access != public) {
		if malformed {
			log.WarnContext(ctx, "token refused: its subject breaks the id rule")
			return problemResponse(problemFor(turns.ErrMalformedIdentity))
		}
		return problemResponse(problemFor(turns.ErrUnauthenticated))
	}
	if !ok {
		return problemResponse(problem.RouteNotFound("no route " + routeKey))
	}
	if rt.access == service && !caller.Service {
		return problemResponse(problemFor(turns.ErrForbidden))
	}
	resp, err := rt.serve(h, &request{ctx: ctx, req: &req, caller: caller, params: params, log: log})
	if err != nil {
		p := problemFor(err)
		if p.Status >= 500 {
			log.ErrorContext(ctx, "request failed", "err", err)
		}
		return problemResponse(p)
	}
	return resp
}

type request struct {
	ctx    context.Context
	req    *events.APIGatewayV2HTTPRequest
	caller turns.Caller
	params map[string]string
	log    *slog.Logger
}

// installView is an install as the API shows it.
type installView struct {
	*turns.Install
	EngineInEffect turns.EngineName `json:"engineInEffect"`
}

func (h *Handler) putInstall(r *request) (events.APIGatewayV2HTTPResponse, error) {
	var body struct {
		UserID       string    `json:"userId"`
		PodID        string    `json:"podId"`
		AgentName    string    `json:"agentName"`
		InstanceID   *string   `json:"instanceId"`
		Engine       *string   `json:"engine"`
		Tools        *[]string `json:"tools"`
		Connectors   *[]string `json:"connectors"`
		Model        *string   `json:"model"`
		SystemPrompt *string   `json:"systemPrompt"`
	}
	if err := decodeBody(r.req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	in, created, err := h.svc.PutInstall(r.ctx, r.caller, r.params["installId"], turns.InstallRequest{
		UserID: body.UserID, PodID: body.PodID, AgentName: body.AgentName, InstanceID: body.InstanceID,
		Engine: body.Engine, Tools: body.Tools, Connectors: body.Connectors, Model: body.Model, SystemPrompt: body.SystemPrompt,
	})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	return jsonResponse(status, installView{in, h.svc.EffectiveEngine(in)}, nil), nil
}

func (h *Handler) getInstall(r *request) (events.APIGatewayV2HTTPResponse, error) {
	in, err := h.svc.Install(r.ctx, r.caller, r.params["installId"])
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, installView{in, h.svc.EffectiveEngine(in)}, nil), nil
}

func (h *Handler) migrate(r *request) (events.APIGatewayV2HTTPResponse, error) {
	var body struct {
		To    string `json:"to"`
		State string `json:"state"`
	}
	if err := decodeBody(r.req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	in, err := h.svc.Migrate(r.ctx, r.caller, r.params["installId"], turns.MigrationRequest{To: body.To, State: body.State})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, installView{in, h.svc.EffectiveEngine(in)}, nil), nil
}

func (h *Handler) setPlan(r *request) (events.APIGatewayV2HTTPResponse, error) {
	var body struct {
		Plan string `json:"plan"`
	}
	if err := decodeBody(r.req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	p, err := h.svc.SetPlan(r.ctx, r.caller, r.params["userId"], body.Plan)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, map[string]string{"userId": r.params["userId"], "plan": string(p)}, nil), nil
}

func (h *Handler) submitTurn(r *request) (events.APIGatewayV2HTTPResponse, error) {
	var body struct {
		Message *string `json:"message"`
		Trigger string  `json:"trigger"`
	}
	if err := decodeBody(r.req, &body); err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	if body.Message == nil {
		return events.APIGatewayV2HTTPResponse{}, turns.Invalid("message", "is required")
	}
	wait, waitSet := preferWait(r.req.Headers)
	sub, err := h.svc.Submit(r.ctx, r.caller, r.params["installId"], turns.TurnRequest{
		Message: *body.Message, Trigger: body.Trigger, IdempotencyKey: header(r.req.Headers, "idempotency-key"),
	})
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	run := sub.Run
	headers := map[string]string{"Location": "/v1/runs/" + run.RunID}
	if sub.Replayed {
		headers["Idempotent-Replayed"] = "true"
	}
	if waitSet {
		headers["Preference-Applied"] = fmt.Sprintf("wait=%d", wait)
		if run, err = h.svc.WaitRun(r.ctx, r.caller, run, time.Duration(wait)*time.Second); err != nil {
			return events.APIGatewayV2HTTPResponse{}, err
		}
		if run.Status.Final() {
			return jsonResponse(http.StatusOK, run, headers), nil
		}
	}
	return jsonResponse(http.StatusAccepted, map[string]string{"runId": run.RunID, "status": string(run.Status), "engine": run.Engine}, headers), nil
}

func (h *Handler) getRun(r *request) (events.APIGatewayV2HTTPResponse, error) {
	run, err := h.svc.GetRun(r.ctx, r.caller, r.params["runId"])
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, run, nil), nil
}

// cancelView is what POST /v1/runs/{runId}/cancel answers.
type cancelView struct {
	RunID  string              `json:"runId"`
	Status runs.Status         `json:"status"`
	Cancel turns.CancelOutcome `json:"cancel"`
}

// cancelRun asks a run to stop: 202 while its worker stops it, 200 when
// it is over (cancelled now, or it had ended, or its answer is on its way
// to the pod: the body says which).
func (h *Handler) cancelRun(r *request) (events.APIGatewayV2HTTPResponse, error) {
	c, err := h.svc.Cancel(r.ctx, r.caller, r.params["runId"])
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	status := http.StatusOK
	if c.Outcome == turns.CancelRequested {
		status = http.StatusAccepted
	}
	return jsonResponse(status, cancelView{RunID: c.Run.RunID, Status: c.Run.Status, Cancel: c.Outcome}, nil), nil
}

func (h *Handler) usage(r *request) (events.APIGatewayV2HTTPResponse, error) {
	u, err := h.svc.Usage(r.ctx, r.caller)
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, newUsageView(u), nil), nil
}

func (h *Handler) userUsage(r *request) (events.APIGatewayV2HTTPResponse, error) {
	u, err := h.svc.UserUsage(r.ctx, r.caller, r.params["userId"], r.req.QueryStringParameters["day"])
	if err != nil {
		return events.APIGatewayV2HTTPResponse{}, err
	}
	return jsonResponse(http.StatusOK, newUsageView(u), nil), nil
}

// usageView is a day's usage as the API shows it.
type usageView struct {
	Plan       string  `json:"plan"`
	Day        string  `json:"day"`
	TurnsUsed  int64   `json:"turnsUsed"`
	TurnsLimit int64   `json:"turnsLimit"`
	CostUSD    float64 `json:"costUSD"`
	CostMicros int64   `json:"costMicros"`
	ResetsAt   string  `json:"resetsAt"`
	// SpendAlarmRaised: the day's spend alarm (DAILY_SPEND_ALARM_USD) was raised.
	SpendAlarmRaised bool `json:"spendAlarmRaised"`
	// SpendCapUSD is the daily spend cap, exact, when the deployment has one.
	SpendCapUSD json.Number `json:"spendCapUSD,omitempty"`
	// ReservedMicros and ReservedUSD are what the day's turns in flight
	// hold under the spend cap, when the deployment has one.
	ReservedMicros *int64      `json:"reservedMicros,omitempty"`
	ReservedUSD    json.Number `json:"reservedUSD,omitempty"`
}

func newUsageView(u *turns.UsageReport) usageView {
	v := usageView{
		Plan: string(u.Plan), Day: u.Day, TurnsUsed: u.TurnsUsed, TurnsLimit: u.TurnsLimit,
		CostUSD: float64(u.CostMicros) / 1e6, CostMicros: u.CostMicros, ResetsAt: u.ResetsAt.UTC().Format(time.RFC3339),
		SpendAlarmRaised: u.SpendAlarmRaised,
	}
	if u.SpendCap > 0 {
		v.SpendCapUSD = json.Number(u.SpendCap.USD())
		reserved := int64(u.ReservedMicros)
		v.ReservedMicros, v.ReservedUSD = &reserved, json.Number(u.ReservedMicros.USD())
	}
	return v
}
