package load

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/shared/tools/runcode"
	"github.com/commonly/runtime/shared/turns"
)

// Role is what a simulated user does with their day.
type Role string

const (
	Light   Role = "light"   // a few turns
	Ceiling Role = "ceiling" // free, past the daily turn ceiling
	Spender Role = "spender" // pro, expensive turns past the alarm and the cap
)

type user struct {
	id       string
	plan     turns.Plan
	role     Role
	token    string
	installs []string
}

// planned is one turn a user will ask for.
type planned struct {
	user    *user
	install string
	n       int
	dir     directive
}

// done is what became of a planned turn.
type done struct {
	planned
	key      string
	attempts []attempt
}

// outcome is the turn's last answer.
func (d done) outcome() attempt { return d.attempts[len(d.attempts)-1] }

// makeUsers builds the users and what each will ask for, shuffled so
// that users' turns interleave as a day's traffic would.
func makeUsers(cfg Config, limits turns.Limits, rng *rand.Rand) ([]*user, []planned) {
	users := make([]*user, cfg.Users)
	var plan []planned
	nCeiling := int(float64(cfg.Users) * cfg.CeilingShare)
	nSpender := int(float64(cfg.Users) * cfg.SpenderShare)
	nPro := int(float64(cfg.Users) * cfg.ProShare)
	for i := range users {
		u := &user{id: fmt.Sprintf("load-user-%04d", i), plan: turns.PlanFree, role: Light}
		switch {
		case i < nCeiling:
			u.role = Ceiling
		case i < nCeiling+nSpender:
			u.role, u.plan = Spender, turns.PlanPro
		case i < nCeiling+nSpender+nPro:
			u.plan = turns.PlanPro
		}
		for j := range cfg.InstallsPerUser {
			u.installs = append(u.installs, fmt.Sprintf("%s-install-%d", u.id, j))
		}
		users[i] = u
		n, kind := cfg.LightTurns, Kind("")
		switch u.role {
		case Ceiling:
			n = int(limits[u.plan]) + 3
		case Spender:
			n, kind = cfg.SpenderTurns, Spend
		}
		for k := range n {
			d := directive{Kind: kind}
			if d.Kind == "" {
				d.Kind = Plain
				if rng.Float64() < 0.3 {
					d.Kind = Code
				}
			}
			if cfg.FaultRate > 0 && rng.Float64() < cfg.FaultRate {
				d.Fault = turnFaults[rng.IntN(len(turnFaults))]
				if d.Fault == WorkerKilled && cfg.Dispatch == app.DispatchInline {
					// No invocation to kill: the turn runs in its request.
					d.Fault = None
				}
				if d.Fault == WorkerKilled && d.Kind == Plain && rng.Float64() < 0.5 {
					// Half the killed turns run code, to die during it.
					d.Kind = Code
				}
			}
			plan = append(plan, planned{user: u, install: u.installs[rng.IntN(len(u.installs))], n: k, dir: d})
		}
	}
	rng.Shuffle(len(plan), func(i, j int) { plan[i], plan[j] = plan[j], plan[i] })
	return users, plan
}

// setUp creates the users' plans and installs through the service routes.
func setUp(ctx context.Context, c *client, users []*user) error {
	for _, u := range users {
		tok, err := c.userToken(u.id)
		if err != nil {
			return err
		}
		u.token = tok
		if u.plan != turns.PlanFree {
			if err := c.adminCall(ctx, http.MethodPut, "/v1/users/"+u.id+"/plan", map[string]string{"plan": string(u.plan)}); err != nil {
				return err
			}
		}
		for _, inst := range u.installs {
			body := map[string]any{"userId": u.id, "podId": "load-pod", "agentName": "load-agent", "engine": "native",
				"tools": []string{script.Tool, runcode.Name, Stall}}
			if err := c.adminCall(ctx, http.MethodPut, "/v1/installs/"+inst, body); err != nil {
				return err
			}
		}
	}
	return nil
}

// disconnectAfter is when a disconnecting client goes away: while its
// turn's code runs (slowCode).
const disconnectAfter = 300 * time.Millisecond

// drive runs the planned turns at cfg.Rate with cfg.Concurrency in flight
// and returns what became of each, in the order they finished.
func drive(ctx context.Context, cfg Config, st *stack, c *client, plan []planned, inj *injected) []done {
	work := make(chan planned)
	results := make(chan done, len(plan))
	var wg sync.WaitGroup
	for range cfg.Concurrency {
		wg.Go(func() {
			for p := range work {
				key := fmt.Sprintf("load-%s-%d-%d", p.user.id, p.n, rand.Uint64())
				var cut time.Duration
				switch p.dir.Fault {
				case ClientDisconnects:
					cut = disconnectAfter
				case SandboxRefused:
					st.e2b.FailCreates(1, http.StatusServiceUnavailable, "sandbox_capacity_unavailable")
				}
				if p.dir.Fault != None {
					inj.turn(p.dir.Fault)
				}
				at := c.turn(ctx, p.user.token, p.install, key, p.dir.message(p.user.id, p.n), cut)
				results <- done{planned: p, key: key, attempts: at}
			}
		})
	}
	var tick <-chan time.Time
	if cfg.Rate > 0 {
		t := time.NewTicker(time.Duration(float64(time.Second) / cfg.Rate))
		defer t.Stop()
		tick = t.C
	}
	for _, p := range plan {
		if tick != nil {
			<-tick
		}
		select {
		case work <- p:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	close(results)
	out := make([]done, 0, len(plan))
	for d := range results {
		out = append(out, d)
	}
	return out
}

// percentile of sorted durations (p in 0..1).
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

func sortDurations(d []time.Duration) { sort.Slice(d, func(i, j int) bool { return d[i] < d[j] }) }
