// Command load is `make load`: many simulated users' turns through the
// local stack's production wiring, with faults injected, then every
// invariant checked, one line each (docs/load.md). It exits 1 when an
// invariant fails.
//
//	go run ./bench/load                      # the defaults: 500 users, faults on
//	go run ./bench/load -users 60 -light 3   # the short run of make test
//	go run ./bench/load -measured bench/scale/measured.json
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/commonly/runtime/bench/internal/load"
)

func main() {
	os.Exit(run())
}

func run() int {
	cfg := load.DefaultConfig()
	flag.IntVar(&cfg.Users, "users", cfg.Users, "simulated users")
	flag.IntVar(&cfg.InstallsPerUser, "installs", cfg.InstallsPerUser, "installs a user")
	flag.IntVar(&cfg.Concurrency, "concurrency", cfg.Concurrency, "turns in flight")
	flag.Float64Var(&cfg.Rate, "rate", cfg.Rate, "turns started a second (0: as fast as concurrency allows)")
	flag.Float64Var(&cfg.ProShare, "pro", cfg.ProShare, "share of users on the pro plan")
	flag.Float64Var(&cfg.CeilingShare, "ceiling-users", cfg.CeilingShare, "share of users (free) who try their ceiling and past it")
	flag.Float64Var(&cfg.SpenderShare, "spenders", cfg.SpenderShare, "share of users (pro) whose turns cost enough to pass the alarm and the cap")
	flag.IntVar(&cfg.LightTurns, "light", cfg.LightTurns, "turns of each other user")
	flag.IntVar(&cfg.SpenderTurns, "spender-turns", cfg.SpenderTurns, "turns each spender tries")
	flag.Float64Var(&cfg.FaultRate, "faults", cfg.FaultRate, "share of turns given a fault, and of stream batches redelivered (0: no faults)")
	flag.Float64Var(&cfg.CutAnswers, "cut-answers", cfg.CutAnswers, "share of the turn function's DynamoDB calls whose answer is lost after the write was applied (with faults on)")
	flag.Float64Var(&cfg.Speed, "speed", cfg.Speed, "how much faster than the wall the stack's clock runs")
	flag.StringVar(&cfg.Ceilings, "ceilings", cfg.Ceilings, "PLAN_TURN_LIMITS")
	flag.StringVar(&cfg.AlarmUSD, "alarm-usd", cfg.AlarmUSD, "DAILY_SPEND_ALARM_USD")
	flag.StringVar(&cfg.CapUSD, "cap-usd", cfg.CapUSD, `DAILY_SPEND_CAP_USD ("" for no cap)`)
	flag.StringVar(&cfg.TurnMaxUSD, "turn-max-usd", cfg.TurnMaxUSD, "TURN_MAX_USD (what the cap reserves a turn)")
	flag.StringVar(&cfg.Dispatch, "dispatch", cfg.Dispatch, "TURN_DISPATCH: lambda (asynchronous, as in AWS) or inline")
	flag.DurationVar(&cfg.ReaperInterval, "reaper-interval", cfg.ReaperInterval, "the reaper's period (wall time)")
	flag.DurationVar(&cfg.LLMTimeout, "llm-timeout", cfg.LLMTimeout, "LLM_TIMEOUT")
	flag.DurationVar(&cfg.ClientTimeout, "client-timeout", cfg.ClientTimeout, "one request's timeout at the client")
	flag.DurationVar(&cfg.Drain, "drain", cfg.Drain, "longest wait for every run to close after the last turn")
	flag.Uint64Var(&cfg.Seed, "seed", cfg.Seed, "seed of the users' turns and faults")
	measured := flag.String("measured", "", "write the measured figures (bench/scale/measured.json) to this file")
	logPath := flag.String("log", "", "the stack's warnings and errors, JSON lines (default: a temporary file, removed when every invariant holds)")
	profile := flag.String("profile", "", "write CPU, mutex and block profiles to this prefix (.cpu, .mutex, .block)")
	flag.Parse()
	if *profile != "" {
		stopProfiles, err := startProfiles(*profile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			return 2
		}
		defer stopProfiles()
	}

	logFile, done, err := openLog(*logPath)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 2
	}
	ok := false
	defer func() { done(ok) }()
	cfg.Out, cfg.Log = os.Stdout, logFile
	fmt.Printf("load: the stack's warnings and errors go to %s\n", logFile.Name())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	res, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "load:", err)
		return 2
	}
	if *measured != "" {
		if err := res.Measured.WriteFile(*measured); err != nil {
			fmt.Fprintln(os.Stderr, "load:", err)
			return 2
		}
		fmt.Printf("load: measured figures written to %s\n", *measured)
	}
	if res.Failed > 0 {
		fmt.Printf("load: %d invariant(s) failed\n", res.Failed)
		return 1
	}
	fmt.Println("load: every invariant holds")
	ok = true
	return 0
}

// openLog opens the stack's log: path, or a new file in the temporary
// directory, which done removes when the run went well (nothing to read
// in it) and keeps, saying where, when it did not.
func openLog(path string) (f *os.File, done func(ok bool), err error) {
	if path != "" {
		f, err = os.Create(path)
		return f, func(bool) { _ = f.Close() }, err
	}
	if f, err = os.CreateTemp("", "commonly-load-*.jsonl"); err != nil {
		return nil, nil, err
	}
	return f, func(ok bool) {
		_ = f.Close()
		if ok {
			_ = os.Remove(f.Name())
			return
		}
		fmt.Printf("load: the stack's warnings and errors are kept in %s\n", f.Name())
	}, nil
}
