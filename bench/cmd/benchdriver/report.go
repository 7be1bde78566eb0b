package main

import (
	"fmt"
	"strings"

	"github.com/commonly/runtime/bench/internal/script"
)

// Targets of the issue.
const (
	targetCPURatio   = 10.0 // the peer's CPU per turn over ours, at least
	targetFixedCalls = 3    // DynamoDB calls per turn: fixed part, at most
	targetRSSMiB     = 40.0
	targetSizeMB     = 12.0 // bootstrap, stripped, in 10^6 bytes
	targetColdMs     = 30.0
)

type report struct {
	o        options
	machine  machine
	ours     summary
	floor    summary
	peer     summary
	cold     cold
	goBench  *goBench
	peerInfo map[string]string
	// pairRatios: the peer's CPU over ours within each run.
	pairRatios []float64
}

func (r report) text() string {
	var b strings.Builder
	if r.goBench != nil {
		b.WriteString("Go benchmarks (benchstat, ./bench):\n\n")
		b.WriteString(r.goBench.raw)
		b.WriteString("\n")
	}
	b.WriteString(r.markdown())
	return b.String()
}

func (r report) markdown() string {
	var b strings.Builder
	m := r.machine
	fmt.Fprintf(&b, "Scripted turn: %d model calls, %d no-op tool calls, zero think time, loopback HTTP/1.1 keep-alive. "+
		"%d processes per side, each %d warm-up turns (excluded) then %d measured turns; medians across processes (min–max of CPU in brackets).\n\n",
		script.Steps, script.Calls, r.o.runs, r.o.warmup, r.o.turns)
	fmt.Fprintf(&b, "Machine: %d CPUs (`nproc`), %s, Linux %s; %s; node %s (@openai/agents %s, openai %s).\n\n",
		m.cpus, m.cpuModel, m.kernel, m.goVer, m.nodeVer, r.peerInfo["agents"], r.peerInfo["openai"])

	b.WriteString("| | CPU ms/turn | of it kernel | wall ms/turn | peak RSS MiB | DynamoDB calls/turn | model calls/turn | allocs/turn | vs the peer (CPU, RSS) |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
	o, f, p := r.ours, r.floor, r.peer
	fmt.Fprintf(&b, "| **ours**: turn process through the API (local gateway + JWT, handler, SDK client; DynamoDB in its own process) | %.3f (%.3f–%.3f) | %.3f | %.3f | %.1f | %.2f | %.2f | | %s less CPU, %s less RSS |\n",
		o.cpuMs, o.cpuMin, o.cpuMax, o.sysMs, o.wallMs, o.peakRSSMiB, o.ddbN, o.modelCalls, times(p.cpuMs/o.cpuMs), times(p.peakRSSMiB/o.peakRSSMiB))
	fmt.Fprintf(&b, "| **floor**: the same process making only the same round trips (the API request served, the model calls, a DynamoDB GetItem per call) with a bare net/http client: no SDK, no turn | %.3f (%.3f–%.3f) | %.3f | %.3f | %.1f | %.2f | %.2f | | %s less CPU |\n",
		f.cpuMs, f.cpuMin, f.cpuMax, f.sysMs, f.wallMs, f.peakRSSMiB, f.ddbN, f.modelCalls, times(p.cpuMs/f.cpuMs))
	fmt.Fprintf(&b, "| **peer**: @openai/agents %s, Chat Completions model, tracing off (node %s) | %.3f (%.3f–%.3f) | %.3f | %.3f | %.1f | – | %.2f | | 1× |\n",
		r.peerInfo["agents"], m.nodeVer, p.cpuMs, p.cpuMin, p.cpuMax, p.sysMs, p.wallMs, p.peakRSSMiB, p.modelCalls)
	if g := r.goBench; g != nil {
		for _, row := range []struct{ name, label string }{
			{"Turn/api", "ours in-process, `go test -bench` Turn/api (whole process: client, gateway, turn, scripted model, embedded DynamoDB)"},
			{"Turn/handler", "ours in-process, Turn/handler (the API Gateway event straight to the handler)"},
			{"Turn/api-info-log", "ours in-process, Turn/api-info-log (info-level logs, Lambda's default)"},
			{"Turn/api-no-install-cache", "ours in-process, Turn/api-no-install-cache (INSTALL_CACHE_TTL=0: no install cache)"},
			{storedFew, "ours in-process, TurnStoredRuns/runs=100 (Turn/api with 100 runs stored)"},
			{storedMany, "ours in-process, TurnStoredRuns/runs=10000 (Turn/api with 10,000 runs stored)"},
		} {
			sec, ok := g.get(row.name, "sec/op")
			if !ok {
				continue
			}
			cpu, _ := g.get(row.name, "proc-cpu-ms/op")
			ddb, _ := g.get(row.name, "ddb-calls/op")
			mc, _ := g.get(row.name, "model-calls/op")
			allocs, _ := g.get(row.name, "allocs/op")
			fmt.Fprintf(&b, "| %s | %.3f | – | %.3f | – | %.2f | %.2f | %.0f | |\n", row.label, cpu, sec*1e3, ddb, mc, allocs)
		}
	}
	b.WriteString("\n")

	c := r.cold
	fmt.Fprintf(&b, "Turn `bootstrap` (make build, stripped): %.1f MB (%.1f MiB). Cold start, median of %d: %.1f ms from starting the Lambda Runtime Interface Emulator "+
		"(its own start included) to the first invocation (GET /v1/me/usage) answered (%.1f–%.1f); %.1f ms for the bootstrap alone, from its start to its first answer posted to a minimal Runtime API (%.1f–%.1f).\n\n",
		float64(c.sizeBytes)/1e6, float64(c.sizeBytes)/(1<<20), len(c.rieMs), median(c.rieMs), minOf(c.rieMs), maxOf(c.rieMs),
		median(c.aloneMs), minOf(c.aloneMs), maxOf(c.aloneMs))
	if len(c.emptyMs) > 0 {
		fmt.Fprintf(&b, "The cold start's floor: an empty Go function (bench/cmd/emptyfn, built the same way, %.1f MB) under the emulator, started alternately with ours: %.1f ms median (%.1f–%.1f), so the turn function's own share is about %.1f ms.\n\n",
			float64(c.emptyBytes)/1e6, median(c.emptyMs), minOf(c.emptyMs), maxOf(c.emptyMs), median(c.rieMs)-median(c.emptyMs))
	}
	if o.ddb != nil {
		fmt.Fprintf(&b, "DynamoDB calls per turn (ours, median run, counted by an SDK middleware): %s.\n\n", o.ddb.PerTurn(o.turns))
	}

	b.WriteString("Targets:\n\n")
	ratio := p.cpuMs / o.cpuMs
	need := p.cpuMs / targetCPURatio
	check(&b, ratio >= targetCPURatio, fmt.Sprintf("CPU per turn ≥ %.0f× less than the peer: %.1f× (ours %.3f ms, peer %.3f ms; %.0f× needs ≤ %.3f ms, %.1f× over). "+
		"Run by run: %.1f× median (%.1f–%.1f). The floor, the same round trips and nothing else, costs %.3f ms (%.1f× the peer): %s",
		targetCPURatio, ratio, o.cpuMs, p.cpuMs, targetCPURatio, need, o.cpuMs/need,
		median(r.pairRatios), minOf(r.pairRatios), maxOf(r.pairRatios), f.cpuMs, p.cpuMs/f.cpuMs, floorVerdict(f.cpuMs, need)))
	maxCalls := float64(targetFixedCalls + script.Steps)
	check(&b, o.ddbN <= maxCalls, fmt.Sprintf("DynamoDB calls per turn ≤ %d fixed + 1 per model step (≤ %.0f for %d steps): %.2f",
		targetFixedCalls, maxCalls, script.Steps, o.ddbN))
	check(&b, o.peakRSSMiB <= targetRSSMiB, fmt.Sprintf("peak RSS of the turn process ≤ %.0f MiB: %.1f MiB", targetRSSMiB, o.peakRSSMiB))
	size := float64(c.sizeBytes) / 1e6
	check(&b, size <= targetSizeMB, fmt.Sprintf("turn bootstrap ≤ %.0f MB stripped: %.1f MB (%.1f× the target)", targetSizeMB, size, size/targetSizeMB))
	coldWhat := fmt.Sprintf("cold start under the emulator ≤ %.0f ms: %.1f ms (the bootstrap alone: %.1f ms", targetColdMs, median(c.rieMs), median(c.aloneMs))
	if len(c.emptyMs) > 0 {
		coldWhat += fmt.Sprintf("; an empty Go function under the emulator: %.1f ms", median(c.emptyMs))
	}
	check(&b, median(c.rieMs) <= targetColdMs, coldWhat+")")
	if g := r.goBench; g != nil {
		fewCPU, ok1 := g.get(storedFew, "proc-cpu-ms/op")
		manyCPU, ok2 := g.get(storedMany, "proc-cpu-ms/op")
		fewWall, ok3 := g.get(storedFew, "sec/op")
		manyWall, ok4 := g.get(storedMany, "sec/op")
		if ok1 && ok2 && ok3 && ok4 {
			check(&b, manyCPU <= fewCPU*targetStoredRatio && manyWall <= fewWall*targetStoredRatio, fmt.Sprintf(
				"a turn with 10,000 runs stored within %.0f %% of one with 100 (in-process, the embedded DynamoDB included): CPU %.3f ms vs %.3f ms (%+.0f %%), wall %.3f ms vs %.3f ms (%+.0f %%)",
				(targetStoredRatio-1)*100, manyCPU, fewCPU, (manyCPU/fewCPU-1)*100, manyWall*1e3, fewWall*1e3, (manyWall/fewWall-1)*100))
		}
	}
	return b.String()
}

// The Go benchmark of a turn with few and with many runs stored, and how
// much slower the second may be.
const (
	storedFew         = "TurnStoredRuns/runs=100"
	storedMany        = "TurnStoredRuns/runs=10000"
	targetStoredRatio = 1.2
)

// floorVerdict says whether the CPU target is within reach of a turn that
// makes the floor's round trips.
func floorVerdict(floorMs, needMs float64) string {
	if floorMs > needMs {
		return fmt.Sprintf("above the %.3f ms the target allows, so no turn making these calls over HTTP meets it on this machine", needMs)
	}
	return fmt.Sprintf("%.3f ms of the %.3f ms the target allows are left for the turn's own work", needMs-floorMs, needMs)
}

func check(b *strings.Builder, ok bool, what string) {
	mark := "met"
	if !ok {
		mark = "MISSED"
	}
	fmt.Fprintf(b, "- %s — %s\n", mark, what)
}

func times(x float64) string {
	if x >= 1 {
		return fmt.Sprintf("%.1f×", x)
	}
	return fmt.Sprintf("%.2f× (more)", x)
}
