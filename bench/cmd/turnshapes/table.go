package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/commonly/runtime/bench/internal/shapes"
)

// MaxAddedShare is the most a memory size may add to a turn's p95 wall
// (issue 39): the size chosen is the smallest that stays within it on
// every shape.
const MaxAddedShare = 0.01

// vCPUMB is the memory at which Lambda gives a function one vCPU.
const vCPUMB = 1769

// sized is one memory size's runs, pooled over the passes.
type sized struct {
	mb     int
	shapes map[string]shapeResult
	order  []string
	cold   []float64
	// throttled periods and time of each cgroup, summed over the passes.
	turnThrottled, eventsThrottled     int
	turnThrottledMs, eventsThrottledMs float64
	turns                              int
	passes                             int
	date                               string
	ttft, interval                     float64
}

// latency is the model's, from the scale model's inputs.
type latency struct {
	ModelSecondsPerCall float64 `json:"modelSecondsPerCall"`
	CodeRunSeconds      float64 `json:"codeRunSeconds"`
}

// turnWallMs is a shape's turn with the model's latency as the scale
// model has it: its calls and its code run.
func (l latency) turnWallMs(s shapes.Shape) float64 {
	w := float64(s.Calls()) * l.ModelSecondsPerCall
	if s.Code {
		w += l.CodeRunSeconds
	}
	return w * 1000
}

func readLatency(scaleDir string) (latency, error) {
	var in struct {
		Turn latency `json:"turn"`
	}
	b, err := os.ReadFile(filepath.Join(scaleDir, "inputs.json"))
	if err != nil {
		return latency{}, err
	}
	if err := json.Unmarshal(b, &in); err != nil {
		return latency{}, err
	}
	if in.Turn.ModelSecondsPerCall <= 0 {
		return latency{}, fmt.Errorf("%s/inputs.json: no turn.modelSecondsPerCall", scaleDir)
	}
	return in.Turn, nil
}

// loadSized reads dir's shapes-MB-PASS.json and throttled-MB-PASS.json.
func loadSized(dir string) ([]*sized, error) {
	files, err := filepath.Glob(filepath.Join(dir, "shapes-*-*.json"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no shapes-MB-PASS.json in %s: %v", dir, err)
	}
	bySize := map[int]*sized{}
	samples := map[int]map[string][]turnSample{}
	for _, f := range files {
		parts := strings.Split(strings.TrimSuffix(filepath.Base(f), ".json"), "-")
		mb, err := strconv.Atoi(parts[1])
		if err != nil {
			return nil, fmt.Errorf("%s: not shapes-MB-PASS.json", f)
		}
		var r results
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		if err := json.Unmarshal(b, &r); err != nil {
			return nil, fmt.Errorf("%s: %w", f, err)
		}
		sz := bySize[mb]
		if sz == nil {
			sz = &sized{mb: mb, shapes: map[string]shapeResult{}, date: r.Date, ttft: r.TTFTMs, interval: r.IntervalMs}
			bySize[mb], samples[mb] = sz, map[string][]turnSample{}
		}
		sz.passes++
		sz.cold = append(sz.cold, r.EventsColdMs...)
		for _, s := range r.Shapes {
			if _, seen := samples[mb][s.Name]; !seen {
				sz.order = append(sz.order, s.Name)
			}
			samples[mb][s.Name] = append(samples[mb][s.Name], s.Samples...)
			sz.turns += len(s.Samples)
		}
		var th struct {
			TurnThrottled     int     `json:"turnThrottled"`
			TurnThrottledMs   float64 `json:"turnThrottledMs"`
			EventsThrottled   int     `json:"eventsThrottled"`
			EventsThrottledMs float64 `json:"eventsThrottledMs"`
		}
		if b, err := os.ReadFile(filepath.Join(dir, "throttled-"+parts[1]+"-"+parts[2]+".json")); err == nil && json.Unmarshal(b, &th) == nil {
			sz.turnThrottled += th.TurnThrottled
			sz.turnThrottledMs += th.TurnThrottledMs
			sz.eventsThrottled += th.EventsThrottled
			sz.eventsThrottledMs += th.EventsThrottledMs
		}
	}
	var out []*sized
	for mb, sz := range bySize {
		for _, name := range sz.order {
			s, ok := shapes.ByName(name)
			if !ok {
				return nil, fmt.Errorf("unknown shape %q", name)
			}
			sz.shapes[name] = summarize(s, samples[mb][name])
		}
		out = append(out, sz)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].mb < out[j].mb })
	return out, nil
}

func sizeName(mb int) string {
	if mb == 0 {
		return "none"
	}
	return strconv.Itoa(mb)
}

func share(mb int) string {
	if mb == 0 {
		return "no quota"
	}
	return fmt.Sprintf("%.3f vCPU", float64(mb)/vCPUMB)
}

// printTables writes the tables of docs/benchmarks.md ("Memory size, on
// the turns users send") and the sizes they choose.
func printTables(w io.Writer, dir, scaleDir string) error {
	lat, err := readLatency(scaleDir)
	if err != nil {
		return err
	}
	sizes, err := loadSized(dir)
	if err != nil {
		return err
	}
	if sizes[0].mb != 0 {
		return fmt.Errorf("no run without a quota (size 0), the reference")
	}
	ref := sizes[0]
	names := ref.order
	fmt.Fprintf(w, "Measured %s: %d pass(es) over the sizes, interleaved, each %d turn(s) of every shape after one unmeasured; the model paced (first chunk after %.0f ms, then a chunk each %.0f ms).\n\n",
		ref.date, ref.passes, ref.shapes[names[0]].Turns/max(1, ref.passes), ref.ttft, ref.interval)

	// The turn function's own time.
	fmt.Fprintf(w, "The turn function: its own time a turn, ms, median / p95 (the turn's wall less its model calls'), and its CPU:\n\n")
	header(w, []string{"MB", "CPU share"}, names, []string{"CPU a turn, ms (median of the shapes' medians; range)", "throttled periods a turn"})
	for _, sz := range sizes {
		fmt.Fprintf(w, "| %s | %s |", sizeName(sz.mb), share(sz.mb))
		var cpu, lo, hi []float64
		for _, n := range names {
			r := sz.shapes[n]
			fmt.Fprintf(w, " %.1f / %.1f |", r.OwnMs.Median, r.OwnP95Ms)
			cpu, lo, hi = append(cpu, r.TurnCPUMs.Median), append(lo, r.TurnCPUMs.Min), append(hi, r.TurnCPUMs.Max)
		}
		fmt.Fprintf(w, " %.1f (%.1f–%.1f) | %.1f |\n", median(cpu), minOf(lo), maxOf(hi), float64(sz.turnThrottled)/float64(max(1, sz.turns)))
	}

	// What each size adds to the p95, against the turn's wall.
	fmt.Fprintf(w, "\nWhat the size adds to a turn's p95 own time over no quota, ms, and its share of the turn's wall with the model's latency as the scale model has it (%.0f s a call, %.0f s a code run):\n\n",
		lat.ModelSecondsPerCall, lat.CodeRunSeconds)
	header(w, []string{"MB"}, names, []string{"worst share"})
	turnPick, eventsPick := 0, 0
	for _, sz := range sizes[1:] {
		fmt.Fprintf(w, "| %s |", sizeName(sz.mb))
		worst := 0.0
		for _, n := range names {
			s, _ := shapes.ByName(n)
			added := sz.shapes[n].OwnP95Ms - ref.shapes[n].OwnP95Ms
			sh := added / lat.turnWallMs(s)
			worst = max(worst, sh)
			fmt.Fprintf(w, " %+.1f (%.2f %%) |", added, 100*sh)
		}
		fmt.Fprintf(w, " %.2f %% |\n", 100*worst)
		if turnPick == 0 && worst <= MaxAddedShare {
			turnPick = sz.mb
		}
	}

	// The events function.
	fmt.Fprintf(w, "\nThe events function, a stream of each shape's turn (one poll a 250 ms): CPU, a poll's processing (from the item's arrival to the end of its writes: the delay it adds to a chunk), what the size adds to it, and a cold start (from the process's start to the end of a finished run's stream):\n\n")
	fmt.Fprintf(w, "| MB | CPU a stream, ms (median of the shapes'; range) | CPU a poll, µs | a poll's processing, µs, p50 / p95 | added at p95 over no quota, ms | cold start, ms, median (range) | throttled periods a stream |\n|---:|---:|---:|---:|---:|---:|---:|\n")
	refP95 := pooledProcess(ref, names, 0.95)
	for _, sz := range sizes {
		var cpu, lo, hi, perPoll []float64
		for _, n := range names {
			r := sz.shapes[n]
			cpu, lo, hi = append(cpu, r.EventsCPUMs.Median), append(lo, r.EventsCPUMs.Min), append(hi, r.EventsCPUMs.Max)
			perPoll = append(perPoll, r.EventsCPUPerPollU)
		}
		p50, p95 := pooledProcess(sz, names, 0.5), pooledProcess(sz, names, 0.95)
		added := (p95 - refP95) / 1000
		cs := statOf(sz.cold)
		fmt.Fprintf(w, "| %s | %.1f (%.1f–%.1f) | %.0f | %.0f / %.0f | %+.2f | %.0f (%.0f–%.0f) | %.1f |\n", sizeName(sz.mb), median(cpu), minOf(lo), maxOf(hi),
			median(perPoll), p50, p95, added, cs.Median, cs.Min, cs.Max, float64(sz.eventsThrottled)/float64(max(1, sz.turns)))
		// A chunk's delay, against the shortest turn's wall.
		if sz.mb > 0 && eventsPick == 0 && added <= MaxAddedShare*lat.ModelSecondsPerCall*1000 {
			eventsPick = sz.mb
		}
	}
	fmt.Fprintf(w, "\nSmallest size within %.0f %% of every shape's turn: the turn function %s MB; the events function %s MB (a chunk's added delay against one model call's %.0f s).\n",
		100*MaxAddedShare, pick(turnPick), pick(eventsPick), lat.ModelSecondsPerCall)
	// The scale model's turn.ownMillisAtMB: every turn's own time, pooled.
	var own []string
	for _, sz := range sizes {
		var all []float64
		for _, n := range names {
			for _, t := range sz.shapes[n].Samples {
				all = append(all, t.OwnMs)
			}
		}
		own = append(own, fmt.Sprintf("%q: %.1f", strconv.Itoa(sz.mb), median(all)))
	}
	fmt.Fprintf(w, "\nThe own time of every turn at each size, median (bench/scale/inputs.json, turn.ownMillisAtMB): {%s}\n", strings.Join(own, ", "))
	return nil
}

// header writes a table's header: the lead columns, a column a shape,
// the tail's; every column numeric (right-aligned).
func header(w io.Writer, lead, names, tail []string) {
	cols := append(append(append([]string{}, lead...), names...), tail...)
	fmt.Fprintf(w, "| %s |\n|%s\n", strings.Join(cols, " | "), strings.Repeat("---:|", len(cols)))
}

func pick(mb int) string {
	if mb == 0 {
		return "none of those measured"
	}
	return strconv.Itoa(mb)
}

// pooledProcess is the q quantile of every poll's processing at a size.
func pooledProcess(sz *sized, names []string, q float64) float64 {
	var all []float64
	for _, n := range names {
		for _, t := range sz.shapes[n].Samples {
			for _, p := range t.ProcessUs {
				all = append(all, float64(p))
			}
		}
	}
	sort.Float64s(all)
	return quantile(all, q)
}

func median(v []float64) float64 { return statOf(v).Median }

func minOf(v []float64) float64 { return statOf(v).Min }

func maxOf(v []float64) float64 { return statOf(v).Max }
