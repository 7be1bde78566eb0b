// Command livebench measures how late "live" is: the delay from a model
// chunk reaching the worker to its text.delta reaching a client through
// the events function, with the intervals the stack deploys (text
// coalesced runs.TextInterval, events flushed turns.EventFlushDelay, the
// run polled -polls), and what watching costs: the worker's writes and
// the read units one watching client spends a minute. It runs the turn
// function's production wiring and the events function's handler on the
// local stand-ins (stack.go) with a model that streams one unique word
// each -gap (model.go). `make bench-live`; docs/benchmarks.md, "How late
// is live".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"
)

func main() {
	turnsN := flag.Int("turns", 10, "turns a poll interval")
	words := flag.Int("words", 100, "words (chunks) of each answer")
	gap := flag.Duration("gap", 30*time.Millisecond, "the model's pause between two chunks")
	polls := flag.String("polls", "250ms,100ms,50ms", "the events function's poll intervals to measure, comma-separated (the first is the deployed one)")
	out := flag.String("markdown", "", "also write the table to this file")
	flag.Parse()
	var intervals []time.Duration
	for _, p := range strings.Split(*polls, ",") {
		d, err := time.ParseDuration(strings.TrimSpace(p))
		if err != nil || d <= 0 {
			fmt.Fprintf(os.Stderr, "livebench: -polls: %q is not a duration\n", p)
			os.Exit(2)
		}
		intervals = append(intervals, d)
	}
	results, err := measure(context.Background(), intervals, *turnsN, *words, *gap, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "livebench:", err)
		os.Exit(1)
	}
	table := render(results, *turnsN, *words, *gap)
	fmt.Print(table)
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "livebench:", errors.Join(err))
			os.Exit(1)
		}
	}
}
