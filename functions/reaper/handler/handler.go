// Package handler is the reaper function's Lambda handler: it translates
// EventBridge's scheduled event into one sweep, and the sweep's report
// into the invocation's result. The function fails only when the sweep
// could read no source, so that the schedule's failure alarm means
// something.
package handler

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/shared/reaper"
)

// Sweeper is one sweep (*reaper.Reaper).
type Sweeper interface {
	Sweep(ctx context.Context) (reaper.Report, error)
}

var _ Sweeper = (*reaper.Reaper)(nil)

// Config wires a Handler. Sweeper is required.
type Config struct {
	Sweeper Sweeper
	// Log is Lambda's logger in the function; nil is slog.Default().
	Log *slog.Logger
	// Now tells how late a scheduled event arrived; nil is time.Now.
	Now func() time.Time
}

// Handler serves the reaper function.
type Handler struct{ cfg Config }

// New checks cfg and returns a Handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Sweeper == nil {
		return nil, errors.New("reaper handler: no sweeper")
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Handler{cfg: cfg}, nil
}

// Result is the invocation's answer: what the sweep did, for whoever
// invokes it by hand (make invoke) or reads the invocation's record.
type Result struct {
	Listed           int  `json:"listed"`
	Expired          int  `json:"expired"`
	Killed           int  `json:"killed"`
	AlreadyGone      int  `json:"alreadyGone"`
	KillFailures     int  `json:"killFailures"`
	Left             int  `json:"left"`
	SourceFailures   int  `json:"sourceFailures"`
	RunsRedispatched int  `json:"runsRedispatched"`
	RunsInterrupted  int  `json:"runsInterrupted"`
	RunsRefunded     int  `json:"runsRefunded"`
	RunsLeft         int  `json:"runsLeft"`
	Cut              bool `json:"cut"`
}

// lateAfter is how late a scheduled event may start a sweep before it is
// said (a minute's schedule: one sweep late is one sweep missed).
const lateAfter = time.Minute

// Handle runs one sweep for a scheduled event (any event: an operator's
// manual invoke sweeps too). The sweep logs and measures itself.
func (h *Handler) Handle(ctx context.Context, ev events.EventBridgeEvent) (Result, error) {
	if !ev.Time.IsZero() {
		if late := h.cfg.Now().Sub(ev.Time); late > lateAfter {
			h.cfg.Log.WarnContext(ctx, "reaper sweep started late", "eventId", ev.ID, "scheduledAt", ev.Time, "lateMs", late.Milliseconds())
		}
	}
	rep, err := h.cfg.Sweeper.Sweep(ctx)
	if err != nil {
		h.cfg.Log.ErrorContext(ctx, "reaper sweep failed: no source could be read", "eventId", ev.ID, "err", err)
		return Result{}, err
	}
	return Result{
		Listed: rep.Listed, Expired: rep.Expired, Killed: rep.Killed, AlreadyGone: rep.AlreadyGone,
		KillFailures: rep.KillFailures, Left: rep.Left, SourceFailures: rep.SourceFailures,
		RunsRedispatched: rep.RunsRedispatched, RunsInterrupted: rep.RunsInterrupted, RunsRefunded: rep.RunsRefunded, RunsLeft: rep.RunsLeft, Cut: rep.Cut,
	}, nil
}
