// Command turnshapes times the turns users send (bench/internal/shapes),
// each watched through the events function, for `make memsize`
// (bench/memsize.sh, which holds the two function processes to a memory
// size's CPU) and for the scale model's watched turn (-watch,
// bench/scale/watch.json).
//
// The driver serves the embedded DynamoDB and the stand-ins (the
// scripted LiteLLM paced as a model streams, the fake E2B, the fake Exa)
// and starts two processes of its own: the turn function
// (bench/cmd/turnproc -shapes, the production wiring with inline
// dispatch) and the events function (bench/cmd/eventsproc). It runs the
// shapes' turns one at a time, round-robin, each watched from its
// admission to run.finished by one stream, and reads from the two
// processes their CPU and the stream's polls.
//
//	turnshapes -turnproc bin/memsize/turnproc -eventsproc bin/memsize/eventsproc \
//	  [-shapes all] [-rounds 3] [-ttft 1s] [-interval 12ms] [-cold 5] [-json out.json] [-watch bench/scale/watch.json]
//	turnshapes -table bin/memsize   # the tables of make memsize's runs
//
// A turn's own time is its wall (the API request, which runs the turn
// inline) less its model calls' (the pacer's record of each call, from
// the request to its last byte): the function's own work and its
// DynamoDB, E2B and search round trips on loopback, which is what a
// memory size can slow.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/commonly/runtime/bench/internal/shapes"
)

type options struct {
	turnproc, eventsproc string
	shapes               []shapes.Shape
	rounds, warmup, cold int
	ttft, interval       time.Duration
	jsonOut, watchOut    string
	label                string
}

func main() {
	var o options
	var list string
	flag.StringVar(&o.turnproc, "turnproc", "bin/memsize/turnproc", "the turn process (bench/cmd/turnproc), or a wrapper that execs it")
	flag.StringVar(&o.eventsproc, "eventsproc", "bin/memsize/eventsproc", "the events process (bench/cmd/eventsproc), or a wrapper that execs it")
	flag.StringVar(&list, "shapes", "all", "the shapes, comma-separated (bench/internal/shapes)")
	flag.IntVar(&o.rounds, "rounds", 3, "measured turns of each shape, round-robin")
	flag.IntVar(&o.warmup, "warmup", 1, "unmeasured turns of each shape first")
	flag.IntVar(&o.cold, "cold", 0, "cold starts of the events process: from its start to a stream's first byte")
	flag.DurationVar(&o.ttft, "ttft", time.Second, "the model's time to its first chunk")
	flag.DurationVar(&o.interval, "interval", 12*time.Millisecond, "the model's time between chunks (a token each: 12 ms is about 80 tokens a second)")
	flag.StringVar(&o.jsonOut, "json", "", "write the results as JSON to this file")
	flag.StringVar(&o.watchOut, "watch", "", "write the watched turns' figures for the scale model to this file (bench/scale/watch.json)")
	flag.StringVar(&o.label, "label", "", "a label for the results (the memory size)")
	table := flag.String("table", "", "print the Markdown tables of the runs in this folder (bench/memsize.sh's shapes-MB-PASS.json) and exit")
	scaleDir := flag.String("scale", "bench/scale", "with -table, the scale model's folder (inputs.json: the model's latency)")
	flag.Parse()
	if *table != "" {
		if err := printTables(os.Stdout, *table, *scaleDir); err != nil {
			fmt.Fprintln(os.Stderr, "turnshapes:", err)
			os.Exit(1)
		}
		return
	}
	var err error
	if o.shapes, err = shapes.Select(list); err == nil {
		err = run(context.Background(), o)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "turnshapes:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.rounds < 1 {
		return errors.New("-rounds must be at least 1")
	}
	st, err := startStack(ctx, o)
	if err != nil {
		return err
	}
	defer st.close()
	res := results{Label: o.label, Date: time.Now().UTC().Format(time.DateOnly), TTFTMs: ms(o.ttft), IntervalMs: ms(o.interval)}
	samples := map[string][]turnSample{}
	for round := -o.warmup; round < o.rounds; round++ {
		for _, s := range o.shapes {
			t, err := st.watchedTurn(ctx, s)
			if err != nil {
				return fmt.Errorf("%s, round %d: %w", s.Name, round, err)
			}
			if round >= 0 {
				samples[s.Name] = append(samples[s.Name], t)
				logf("%s %s: %s", o.label, s.Name, t)
			}
		}
	}
	for _, s := range o.shapes {
		res.Shapes = append(res.Shapes, summarize(s, samples[s.Name]))
	}
	if o.cold > 0 {
		if res.EventsColdMs, err = st.eventsColdStarts(ctx, o.cold); err != nil {
			return fmt.Errorf("cold starts: %w", err)
		}
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	fmt.Println(string(b))
	if o.jsonOut != "" {
		if err := os.WriteFile(o.jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if o.watchOut != "" {
		return writeWatch(o, res)
	}
	return nil
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

func ms(d time.Duration) float64 { return float64(d) / 1e6 }
