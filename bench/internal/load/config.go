package load

import (
	"errors"
	"io"
	"time"
)

// Config sizes and shapes a run. DefaultConfig is `make load`'s.
type Config struct {
	// Users are the simulated users; InstallsPerUser each one's installs.
	Users, InstallsPerUser int
	// Concurrency bounds the turns in flight; Rate the turns started a
	// second (0: as fast as Concurrency allows).
	Concurrency int
	Rate        float64
	// ProShare of the users are on the pro plan; CeilingShare of them
	// (free users) try their ceiling plus a few; SpenderShare of them (pro
	// users) make expensive turns past the spend alarm and the cap. The
	// others make LightTurns turns each.
	ProShare, CeilingShare, SpenderShare float64
	LightTurns, SpenderTurns             int
	// FaultRate is the share of turns given one of the turn faults, and
	// of the runs stream's batches delivered more than once; 0 runs
	// without faults (no EventBridge failures, no leaked sandboxes).
	FaultRate float64
	// CutAnswers is the share of the turn function's DynamoDB calls whose
	// first answer is lost after the write was applied (kill.go), on all
	// its traffic; 0 with FaultRate 0.
	CutAnswers float64
	// Speed is how much faster than the wall the stack's clock runs.
	Speed float64
	// Ceilings is PLAN_TURN_LIMITS; AlarmUSD DAILY_SPEND_ALARM_USD;
	// CapUSD DAILY_SPEND_CAP_USD ("" for none).
	Ceilings, AlarmUSD, CapUSD string
	// TurnMaxUSD is TURN_MAX_USD, what one turn may cost, which the cap
	// reserves at admission: below the cap, so that a user's turns can run
	// side by side (a cap of 0.20 reserves it all for one turn at 0.25).
	TurnMaxUSD string
	// Dispatch is TURN_DISPATCH: lambda (as make run and AWS: the request
	// answers at admission, the turn runs in an invocation of its own) or
	// inline (the turn runs inside its request).
	Dispatch string
	// ReaperInterval is the reaper's period (wall); LLMTimeout is
	// LLM_TIMEOUT; ClientTimeout bounds one request of the client.
	ReaperInterval, LLMTimeout, ClientTimeout time.Duration
	// Drain bounds the wait, after the last turn, for every run to close.
	Drain time.Duration
	Seed  uint64
	// Out gets the report; Log the stack's warnings and errors (JSON).
	Out, Log io.Writer
}

// DefaultConfig is `make load`: 500 users, both plans, faults on.
func DefaultConfig() Config {
	return Config{
		Users: 500, InstallsPerUser: 3, Concurrency: 48,
		ProShare: 0.3, CeilingShare: 0.12, SpenderShare: 0.06, LightTurns: 3, SpenderTurns: 24,
		FaultRate: 0.05, CutAnswers: 0.01, Speed: 12,
		Ceilings: "free=30,pro=200", AlarmUSD: "0.10", CapUSD: "0.20", TurnMaxUSD: "0.05", Dispatch: "lambda",
		ReaperInterval: 2 * time.Second, LLMTimeout: 2 * time.Second, ClientTimeout: 8 * time.Second,
		Drain: 90 * time.Second, Seed: 1,
		Out: io.Discard, Log: io.Discard,
	}
}

func (c Config) check() error {
	var errs []error
	if c.Users < 1 || c.InstallsPerUser < 1 || c.Concurrency < 1 {
		errs = append(errs, errors.New("users, installs and concurrency must be at least 1"))
	}
	if c.Speed < 1 {
		errs = append(errs, errors.New("speed must be at least 1"))
	}
	if c.ReaperInterval <= 0 || c.LLMTimeout <= 0 || c.ClientTimeout <= c.LLMTimeout {
		errs = append(errs, errors.New("the reaper interval and LLM timeout must be positive, the client timeout longer than the LLM timeout"))
	}
	for _, s := range []float64{c.ProShare, c.CeilingShare, c.SpenderShare, c.FaultRate, c.CutAnswers} {
		if s < 0 || s > 1 {
			errs = append(errs, errors.New("shares and the fault rate are between 0 and 1"))
			break
		}
	}
	return errors.Join(errs...)
}
