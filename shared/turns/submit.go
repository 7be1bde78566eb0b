package turns

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/tracing"
	"github.com/commonly/runtime/shared/utcday"
)

// TurnRequest is a request to run one turn.
type TurnRequest struct {
	Message        string
	Trigger        string
	IdempotencyKey string
}

// Submitted is the result of Submit.
type Submitted struct {
	Run *runs.Run
	// Replayed is true when an earlier request with the same idempotency
	// key created the run.
	Replayed bool
}

func (r TurnRequest) validate() error {
	if r.Message == "" {
		return Invalid("message", "is required")
	}
	if !utf8.ValidString(r.Message) {
		return Invalid("message", "is not valid UTF-8")
	}
	if n := utf8.RuneCountInString(r.Message); n > MaxMessageChars {
		return Invalid("message", "is %d characters, the limit is %d", n, MaxMessageChars)
	}
	if utf8.RuneCountInString(r.Trigger) > MaxTriggerChars {
		return Invalid("trigger", "is longer than %d characters", MaxTriggerChars)
	}
	if len(r.IdempotencyKey) > MaxIdemKeyChars {
		return Invalid("Idempotency-Key", "is longer than %d characters", MaxIdemKeyChars)
	}
	// A header value may hold any byte; the key is kept on the run, and
	// DynamoDB refuses a string that is not UTF-8.
	if strings.ContainsFunc(r.IdempotencyKey, func(c rune) bool { return c < 0x20 || c > 0x7e }) {
		return Invalid("Idempotency-Key", "must be printable ASCII")
	}
	return nil
}

// hash identifies a request's content for idempotency: the same key with
// a different install, message or trigger is a conflict.
func (r TurnRequest) hash(installID string) string {
	h := sha256.New()
	for _, s := range []string{installID, r.Message, r.Trigger} {
		fmt.Fprintf(h, "%d:%s;", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Submit admits one turn and dispatches it.
func (s *Service) Submit(ctx context.Context, c Caller, installID string, req TurnRequest) (*Submitted, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	if !tablekeys.ValidID(installID) {
		return nil, Invalid("installId", tablekeys.IDRule)
	}
	if req.Trigger == "" {
		req.Trigger = DefaultTrigger
	}
	if err := req.validate(); err != nil {
		return nil, err
	}

	inst, plan, err := s.installAndPlan(ctx, c, installID)
	if err != nil {
		return nil, err
	}
	engine := EffectiveEngine(*inst, s.cfg.DefaultEngine)
	if engine == DurableObject && !s.cfg.FallbackConfigured {
		return nil, ErrFallbackUnconfigured
	}

	now := s.now().UTC()
	run := &runs.Run{
		RunID: s.newID(), InstallID: inst.InstallID, UserID: inst.UserID, PodID: inst.PodID,
		AgentName: inst.AgentName, InstanceID: inst.InstanceID, Engine: string(engine),
		Trigger: req.Trigger, Message: req.Message, Day: utcday.Of(now),
		Status: runs.StatusQueued, CreatedAt: now, Steps: []runs.Step{}, MaxAttempts: s.maxAttempts(engine),
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.hash(installID),
		TraceID: tracing.TraceID(ctx), TraceSpanID: tracing.SpanID(ctx),
	}
	res, plan, err := s.admit(ctx, Admission{Run: run, Plan: plan, SpendCap: s.cfg.SpendCap, Reserve: s.cfg.TurnBound, MinReserve: s.cfg.MinReservation,
		IdempotencyKey: req.IdempotencyKey, CallerID: c.ID, Now: now})
	if err != nil {
		// The count could not be checked: refuse (fail closed, 503).
		return nil, err
	}
	limit := s.cfg.Limits.For(plan)
	switch {
	case res.ReplayOf != "":
		if res.ReplayHash != run.RequestHash {
			return nil, ErrIdempotencyConflict
		}
		prev, err := s.store.GetRun(ctx, res.ReplayOf)
		if err != nil {
			return nil, wrapUnavailable("read replayed run", err)
		}
		return &Submitted{Run: prev, Replayed: true}, nil
	case !res.Admitted && res.CapRefused:
		s.cfg.Metrics.Emit(map[string]string{"Plan": string(plan)}, metrics.Metric{Name: "TurnsRefusedAtSpendCap", Unit: metrics.Count, Value: 1})
		resets := utcday.ResetsAt(now)
		return nil, &SpendCapError{Limit: s.cfg.SpendCap, Spent: res.CapSpent, Reserved: res.CapReserved, ResetsAt: resets, RetryAfter: resets.Sub(now)}
	case !res.Admitted:
		s.cfg.Metrics.Emit(map[string]string{"Plan": string(plan)}, metrics.Metric{Name: MetricCeilingRefusals, Unit: metrics.Count, Value: 1})
		resets := utcday.ResetsAt(now)
		return nil, &CeilingError{Limit: limit, Used: res.CeilingUsed, ResetsAt: resets, RetryAfter: resets.Sub(now)}
	}

	s.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine}, metrics.Metric{Name: "TurnsAdmitted", Unit: metrics.Count, Value: 1})
	s.log.InfoContext(ctx, "turn admitted", "runId", run.RunID, "userId", run.UserID, "installId", run.InstallID, "engine", run.Engine)
	latest, err := s.dispatchTraced(ctx, run)
	if errors.Is(err, ErrFinalWrite) {
		// Inline dispatch: the turn ran, but its final write failed. The
		// run stays running for whoever closes abandoned runs; it is not
		// an undispatched turn to close and refund.
		s.log.ErrorContext(ctx, "the turn ran but its final write failed", "runId", run.RunID, "err", err)
		return nil, fmt.Errorf("dispatch %s: %w: %w", run.RunID, ErrUnavailable, err)
	}
	if err != nil {
		// The turn never started: close the run and give the turn back.
		s.log.ErrorContext(ctx, "dispatch failed", "runId", run.RunID, "err", err)
		s.failUnstarted(ctx, run, runs.ErrUnknown, "the turn could not be dispatched")
		return nil, fmt.Errorf("dispatch %s: %w", run.RunID, ErrUnavailable)
	}
	if latest != nil {
		run = latest
	}
	return &Submitted{Run: run}, nil
}

// maxPlanAttempts bounds admissions of one turn refused because the
// user's plan changed under them; a plan flipping faster than that is
// refused with 503 rather than admitted unchecked.
const maxPlanAttempts = 3

// admit admits a under the limit of a.Plan. When the user's plan is no
// longer a.Plan (a guess from an earlier turn, or a change since the
// read), it reads the plan and tries again. It returns the plan the
// result was decided under.
func (s *Service) admit(ctx context.Context, a Admission) (AdmitResult, Plan, error) {
	for attempt := 1; ; attempt++ {
		a.Limit = s.cfg.Limits.For(a.Plan)
		// The run records the plan it is admitted under, for the usage
		// report's turns by plan.
		a.Run.Plan = string(a.Plan)
		res, err := s.store.Admit(ctx, a)
		if err != nil {
			return AdmitResult{}, "", wrapUnavailable("admit turn", err)
		}
		if !res.PlanChanged {
			return res, a.Plan, nil
		}
		if attempt == maxPlanAttempts {
			return AdmitResult{}, "", fmt.Errorf("admit turn: the plan of %s kept changing: %w", a.Run.UserID, ErrUnavailable)
		}
		if a.Plan, err = s.readPlan(ctx, a.Run.UserID); err != nil {
			return AdmitResult{}, "", err
		}
	}
}

// readPlan reads a user's plan and remembers it.
func (s *Service) readPlan(ctx context.Context, userID string) (Plan, error) {
	p, err := s.store.GetPlan(ctx, userID)
	if err != nil {
		return "", wrapUnavailable("read plan", err)
	}
	s.plans.put(userID, p)
	return p, nil
}

// failUnstarted finalises a run that never reached an engine: an
// infrastructure failure, refunded by the rule (nothing answered yet).
func (s *Service) failUnstarted(ctx context.Context, run *runs.Run, kind runs.ErrorKind, msg string) {
	ctx, cancel := finalContext(ctx)
	defer cancel()
	run.End(runs.StatusFailed, kind, msg, s.now())
	run.Refunded = run.RefundDue(true)
	if err := s.store.FinishRun(ctx, run, run.Refunded); err != nil {
		s.log.ErrorContext(ctx, "could not finalise undispatched run", "runId", run.RunID, "err", err)
	}
}

// installAndPlan returns the install and its owner's plan: the plan read
// with the install, or else remembered from an earlier turn (Admit checks
// it), or else read.
func (s *Service) installAndPlan(ctx context.Context, c Caller, installID string) (*Install, Plan, error) {
	inst, cached := s.installs.cached(installID)
	var batched Plan
	if !cached {
		var err error
		if c.Service {
			inst, err = s.store.GetInstall(ctx, installID)
		} else {
			// The owner should be the caller: read the caller's plan with it.
			inst, batched, err = s.store.GetInstallAndPlan(ctx, installID, c.ID)
		}
		if err != nil {
			return nil, "", wrapUnavailable("read install", err)
		}
		s.installs.put(inst)
	}
	if !c.canActFor(inst.UserID) {
		// Someone else's install is reported as missing, so install ids
		// cannot be probed; operators still see the attempt.
		s.log.WarnContext(ctx, "turn refused: the caller is not the install's owner", "userId", c.ID, "installId", installID)
		return nil, "", fmt.Errorf("install %q of another user: %w", installID, ErrNotFound)
	}
	if batched != "" {
		s.plans.put(inst.UserID, batched)
		return inst, batched, nil
	}
	if p, ok := s.plans.get(inst.UserID); ok {
		return inst, p, nil
	}
	p, err := s.readPlan(ctx, inst.UserID)
	return inst, p, err
}
