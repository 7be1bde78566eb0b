package turns

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
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
	// With a spend cap, TurnBound is the most one turn may reserve (its
	// money bound, TURN_MAX_USD; zero means the loop's default, $0.25),
	// and MinReservation the least reservation a turn is admitted with:
	// the priced worst case of the smallest useful model call
	// (MinUsefulCall); zero means any positive amount.
	TurnBound      money.Micros
	MinReservation money.Micros
	// Tools and Connectors are the names an install may list in its tools
	// and connectors: the native engine's catalog, configured in this
	// deployment or not (native.Engine.ToolNames, ConnectorNames), so
	// that a misspelt name is refused when the install is written rather
	// than failing each of its turns. Nil knows none: an install may then
	// list no tool or connector.
	Tools      []string
	Connectors []string
	// MaxAttempts is how many workers may hold a native run in all: the
	// first and those that take it over after one stopped
	// (TURN_MAX_ATTEMPTS); zero means DefaultMaxAttempts. A Durable
	// Object run has one: that runtime cannot be resumed.
	MaxAttempts int
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
	if cfg.MaxAttempts < 0 {
		errs = append(errs, fmt.Errorf("turns: max attempts %d is negative", cfg.MaxAttempts))
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
	if cfg.TurnBound < 0 || cfg.MinReservation < 0 {
		errs = append(errs, fmt.Errorf("turns: turn bound %s or minimum reservation %s is negative", cfg.TurnBound, cfg.MinReservation))
	}
	if cfg.TurnBound == 0 {
		cfg.TurnBound = runs.DefaultTurnMaxCost
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
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = DefaultMaxAttempts
	}
	if cfg.Installs == nil {
		cfg.Installs = uncached(cfg.Store)
	}
	return &Service{cfg: cfg, store: traced(cfg.Store), dispatch: cfg.Dispatcher, now: cfg.Now, log: cfg.Log, newID: NewRunID, installs: cfg.Installs}, nil
}

// NewRunID returns a random, URL-safe run id.
func NewRunID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(fmt.Sprintf("crypto/rand failed: %v", err)) // never happens on Linux
	}
	return "run_" + hex.EncodeToString(b[:])
}

// wrapUnavailable keeps outcome errors (not found) and marks the rest as
// the store being unavailable, so the ceiling fails closed with a 503.
func wrapUnavailable(what string, err error) error {
	if err == nil || errors.Is(err, ErrNotFound) {
		return err
	}
	return fmt.Errorf("%s: %w: %w", what, ErrUnavailable, err)
}

// maxAttempts is how many workers may hold a run of engine: one for the
// Durable Object runtime, which has no resume wire.
func (s *Service) maxAttempts(engine EngineName) int {
	if engine == Native {
		return s.cfg.MaxAttempts
	}
	return 1
}

// finalContext gives final writes their own short deadline, detached from
// a request or invocation context that may already be cancelled: a run
// must reach a final status even when its turn was interrupted.
func finalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
}
