package turns

import (
	"context"
	"time"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/utcday"
)

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
	// ReservedMicros is what the day's turns in flight hold under the
	// spend cap (released by each run's final write); zero without a cap.
	ReservedMicros money.Micros
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
// zero once the day's items have expired (tablekeys.Retention).
func (s *Service) UserUsage(ctx context.Context, c Caller, userID, day string) (*UsageReport, error) {
	if err := requireService(c); err != nil {
		return nil, err
	}
	if !tablekeys.ValidID(userID) {
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
		ReservedMicros: money.Micros(u.ReservedMicros),
	}, nil
}
