package turns

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/keys"
	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/utcday"
)

// Request limits. A turn's message is what a person typed in a pod; the
// cap keeps one turn from carrying a document into the model's context.
const (
	MaxMessageChars = 16000
	MaxTriggerChars = 64
	MaxIdemKeyChars = 255
	DefaultTrigger  = "user"
)

// Dispatcher starts a run on its engine. It returns the run's latest state
// when it knows it (inline dispatch runs the turn to the end), or nil.
type Dispatcher interface {
	Dispatch(ctx context.Context, run *runs.Run) (*runs.Run, error)
}

// ServiceConfig configures a Service. Zero values are the documented
// defaults; NewService refuses what the service cannot run with.
type ServiceConfig struct {
	// Store is required.
	Store Store
	// Dispatcher starts admitted runs; required.
	Dispatcher Dispatcher
	// Limits gives every plan's daily ceiling (ParseLimits); required.
	Limits Limits
	// DefaultEngine is the engine of installs that name none; zero means
	// Native.
	DefaultEngine EngineName
	// SpendCap, when positive, is the user-day cost at which turns are
	// refused (DAILY_SPEND_CAP_USD); zero means no cap: the spend alarm
	// only alarms.
	SpendCap money.Micros
	// Tools and Connectors are the names an install may list in its tools
	// and connectors: the native engine's catalog, configured in this
	// deployment or not (native.Engine.ToolNames, ConnectorNames), so
	// that a misspelt name is refused when the install is written rather
	// than failing each of its turns. Nil knows none: an install may then
	// list no tool or connector.
	Tools      []string
	Connectors []string
	// FallbackConfigured says whether the Durable Object runtime can be
	// reached (DO_RUNTIME_URL set): turns routed there are refused up front
	// otherwise, before they are counted.
	FallbackConfigured bool
	// Metrics receives admission events; nil discards.
	Metrics *metrics.Emitter
	// Installs is the container's install cache, shared with the worker;
	// nil reads the install on every turn.
	Installs *InstallCache
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Log gets request-scoped lines; nil means slog.Default().
	Log *slog.Logger
}

// Service is the turn API's domain.
type Service struct {
	cfg      ServiceConfig
	store    Store
	dispatch Dispatcher
	installs *InstallCache
	// plans remembers the plan last seen for each user, so that a warm
	// turn need not read it. A guess is never trusted: Admit checks in its
	// transaction that the plan is still the one the limit was taken
	// from, and a stale guess costs a read and a second admission, never a
	// turn admitted under another plan's ceiling.
	plans boundedMap[Plan]
	now   func() time.Time
	newID func() string
	log   *slog.Logger
}

// NewService checks cfg and fills its defaults.
func NewService(cfg ServiceConfig) (*Service, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("turns: the service needs a store"))
	}
	if cfg.Dispatcher == nil {
		errs = append(errs, errors.New("turns: the service needs a dispatcher"))
	}
	for _, p := range AllPlans() {
		if _, ok := cfg.Limits[p]; !ok {
			errs = append(errs, fmt.Errorf("turns: no daily limit for plan %s", p))
		}
	}
	if cfg.SpendCap < 0 {
		errs = append(errs, fmt.Errorf("turns: spend cap %s is negative", cfg.SpendCap))
	}
	if cfg.DefaultEngine == "" {
		cfg.DefaultEngine = Native
	}
	if _, err := ParseEngine(string(cfg.DefaultEngine)); err != nil {
		errs = append(errs, fmt.Errorf("turns: default engine: %w", err))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Installs == nil {
		cfg.Installs = uncached(cfg.Store)
	}
	return &Service{cfg: cfg, store: cfg.Store, dispatch: cfg.Dispatcher, now: cfg.Now, log: cfg.Log, newID: NewRunID, installs: cfg.Installs}, nil
}

// NewRunID returns a random, URL-safe run id.
func NewRunID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // never happens on Linux
	}
	return "run_" + hex.EncodeToString(b[:])
}

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
	if !keys.ValidID(installID) {
		return nil, Invalid("installId", keys.IDRule)
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
		Status: runs.StatusQueued, CreatedAt: now, Steps: []runs.Step{},
		IdempotencyKey: req.IdempotencyKey, RequestHash: req.hash(installID),
	}
	res, plan, err := s.admit(ctx, Admission{Run: run, Plan: plan, SpendCap: s.cfg.SpendCap, IdempotencyKey: req.IdempotencyKey, CallerID: c.ID, Now: now})
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
	case !res.Admitted && res.CapSpent > 0:
		s.cfg.Metrics.Emit(map[string]string{"Plan": string(plan)}, metrics.Metric{Name: "TurnsRefusedAtSpendCap", Unit: metrics.Count, Value: 1})
		resets := utcday.ResetsAt(now)
		return nil, &SpendCapError{Limit: s.cfg.SpendCap, Spent: res.CapSpent, ResetsAt: resets, RetryAfter: resets.Sub(now)}
	case !res.Admitted:
		s.cfg.Metrics.Emit(map[string]string{"Plan": string(plan)}, metrics.Metric{Name: "TurnsRefusedAtCeiling", Unit: metrics.Count, Value: 1})
		resets := utcday.ResetsAt(now)
		return nil, &CeilingError{Limit: limit, Used: res.CeilingUsed, ResetsAt: resets, RetryAfter: resets.Sub(now)}
	}

	s.cfg.Metrics.Emit(map[string]string{"Engine": run.Engine}, metrics.Metric{Name: "TurnsAdmitted", Unit: metrics.Count, Value: 1})
	s.log.InfoContext(ctx, "turn admitted", "runId", run.RunID, "userId", run.UserID, "installId", run.InstallID, "engine", run.Engine)
	latest, err := s.dispatch.Dispatch(ctx, run)
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

// wrapUnavailable keeps outcome errors (not found) and marks the rest as
// the store being unavailable, so the ceiling fails closed with a 503.
func wrapUnavailable(what string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

// GetRun returns a run its owner or a service caller may see.
func (s *Service) GetRun(ctx context.Context, c Caller, runID string) (*runs.Run, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	if !keys.ValidID(runID) {
		return nil, Invalid("runId", keys.IDRule)
	}
	r, err := s.store.GetRun(ctx, runID)
	if err != nil {
		return nil, wrapUnavailable("read run", err)
	}
	if !c.canActFor(r.UserID) {
		// Someone else's run is reported as missing, so run ids cannot be probed.
		return nil, fmt.Errorf("run %q: %w", runID, ErrNotFound)
	}
	return r, nil
}

// WaitRun polls a run until it is final or wait elapses, and returns its
// latest state.
func (s *Service) WaitRun(ctx context.Context, c Caller, run *runs.Run, wait time.Duration) (*runs.Run, error) {
	deadline := s.now().Add(wait)
	delay := 100 * time.Millisecond
	for !run.Status.Final() {
		left := deadline.Sub(s.now())
		if left <= 0 {
			return run, nil
		}
		t := time.NewTimer(min(delay, left))
		select {
		case <-ctx.Done():
			t.Stop()
			return run, nil
		case <-t.C:
		}
		delay = min(delay*2, time.Second)
		latest, err := s.GetRun(ctx, c, run.RunID)
		if err != nil {
			return nil, err
		}
		run = latest
	}
	return run, nil
}

// UsageReport is a user's consumption on one UTC day (GET /v1/me/usage,
// GET /v1/users/{userId}/usage).
type UsageReport struct {
	Plan       Plan
	TurnsUsed  int64
	TurnsLimit int64
	// CostMicros is the day's cost as the alarm function's ledger has
	// counted it from the runs stream: it trails the runs by the stream's
	// delay (seconds).
	CostMicros int64
	ResetsAt   time.Time
	// Day is the UTC day reported.
	Day string
	// SpendAlarmRaised: the day's spend alarm was raised.
	SpendAlarmRaised bool
	// SpendCap is the deployment's daily spend cap; zero when none.
	SpendCap money.Micros
}

// Usage reports the caller's consumption for the current UTC day.
func (s *Service) Usage(ctx context.Context, c Caller) (*UsageReport, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	return s.usageOn(ctx, c.ID, utcday.Of(s.now()))
}

// UserUsage reports a user's consumption on a UTC day ("" is today), for
// the Commonly backend (support, the admin view): any day up to today,
// zero once the day's items have expired (keys.Retention).
func (s *Service) UserUsage(ctx context.Context, c Caller, userID, day string) (*UsageReport, error) {
	if err := requireService(c); err != nil {
		return nil, err
	}
	if !keys.ValidID(userID) {
		return nil, Invalid("userId", "must be 1-128 characters without '#' or control characters")
	}
	today := utcday.Of(s.now())
	if day == "" {
		day = today
	}
	if t, err := time.Parse(utcday.Layout, day); err != nil || utcday.Of(t) != day {
		return nil, Invalid("day", "must be a UTC day, YYYY-MM-DD")
	}
	if day > today { // same-width ISO dates order as strings
		return nil, Invalid("day", "is after today (%s, UTC)", today)
	}
	return s.usageOn(ctx, userID, day)
}

func (s *Service) usageOn(ctx context.Context, userID, day string) (*UsageReport, error) {
	u, err := s.store.Usage(ctx, userID, day)
	if err != nil {
		return nil, wrapUnavailable("read usage", err)
	}
	plan := u.Plan
	if plan == "" {
		plan = PlanFree
	}
	start, _ := time.Parse(utcday.Layout, day)
	return &UsageReport{
		Plan: plan, TurnsUsed: u.Turns, TurnsLimit: s.cfg.Limits.For(plan), CostMicros: u.CostMicros,
		ResetsAt: utcday.ResetsAt(start), Day: day, SpendAlarmRaised: u.SpendAlarmRaised, SpendCap: s.cfg.SpendCap,
	}, nil
}

// finalContext gives final writes their own short deadline, detached from
// a request or invocation context that may already be cancelled: a run
// must reach a final status even when its turn was interrupted.
func finalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
