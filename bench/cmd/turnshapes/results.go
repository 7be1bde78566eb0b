package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"time"

	"github.com/commonly/runtime/bench/internal/shapes"
	"github.com/commonly/runtime/bench/scale"
)

// results is the run's output (-json).
type results struct {
	Label        string        `json:"label,omitempty"`
	Date         string        `json:"date"`
	TTFTMs       float64       `json:"ttftMs"`
	IntervalMs   float64       `json:"intervalMs"`
	Shapes       []shapeResult `json:"shapes"`
	EventsColdMs []float64     `json:"eventsColdMs,omitempty"`
}

// stat is a figure's median and range over a shape's turns.
type stat struct {
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
}

func statOf(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return stat{Median: quantile(s, 0.5), Min: s[0], Max: s[len(s)-1]}
}

// quantile of sorted s, interpolated.
func quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return 0
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i+1 >= len(s) {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// shapeResult is a shape's figures over its measured turns.
type shapeResult struct {
	Name         string `json:"name"`
	Turns        int    `json:"turns"`
	Calls        int    `json:"calls"`
	PromptTokens int64  `json:"promptTokens"`
	TurnCPUMs    stat   `json:"turnCpuMs"`
	WallMs       stat   `json:"wallMs"`
	// OwnMs is the wall less the model's; OwnP95Ms its 95th percentile.
	OwnMs    stat    `json:"ownMs"`
	OwnP95Ms float64 `json:"ownP95Ms"`
	// The stream: the events process's CPU a stream and a poll, its
	// polls, the read units of each and the run item read.
	EventsCPUMs       stat    `json:"eventsCpuMs"`
	EventsCPUPerPollU float64 `json:"eventsCpuPerPollUs"`
	Polls             stat    `json:"polls"`
	ReadUnitsPerPoll  float64 `json:"readUnitsPerPoll"`
	ReadUnitsPerSec   float64 `json:"readUnitsPerStreamSecond"`
	MeanItemKB        float64 `json:"meanItemKB"`
	MaxItemKB         float64 `json:"maxItemKB"`
	// ProcessUs: from a poll's item to the end of its writes, over the
	// polls that wrote (the delay the function adds to a chunk).
	ProcessP50Us float64 `json:"processP50Us"`
	ProcessP95Us float64 `json:"processP95Us"`
	Events       float64 `json:"events"`
	StreamKB     float64 `json:"streamKB"`
	StreamMs     stat    `json:"streamMs"`
	// Samples are the turns themselves, for -table to pool passes.
	Samples []turnSample `json:"samples"`
}

func summarize(s shapes.Shape, ts []turnSample) shapeResult {
	r := shapeResult{Name: s.Name, Turns: len(ts), Calls: s.Calls(), Samples: ts}
	pick := func(f func(turnSample) float64) []float64 {
		v := make([]float64, len(ts))
		for i, t := range ts {
			v[i] = f(t)
		}
		return v
	}
	r.TurnCPUMs = statOf(pick(func(t turnSample) float64 { return t.TurnCPUMs }))
	r.WallMs = statOf(pick(func(t turnSample) float64 { return t.WallMs }))
	own := pick(func(t turnSample) float64 { return t.OwnMs })
	r.OwnMs = statOf(own)
	sort.Float64s(own)
	r.OwnP95Ms = quantile(own, 0.95)
	r.EventsCPUMs = statOf(pick(func(t turnSample) float64 { return t.EventsCPUMs }))
	r.Polls = statOf(pick(func(t turnSample) float64 { return float64(t.Polls) }))
	r.StreamMs = statOf(pick(func(t turnSample) float64 { return t.StreamMs }))
	var polls, units, item, cpu, events, bytes, streamMs float64
	var process []float64
	for _, t := range ts {
		polls += float64(t.Polls)
		units += float64(t.ReadUnits)
		item += float64(t.ItemBytes)
		cpu += t.EventsCPUMs
		events += float64(t.Events)
		bytes += float64(t.StreamBytes)
		streamMs += t.StreamMs
		r.MaxItemKB = max(r.MaxItemKB, float64(t.MaxItem)/1024)
		r.PromptTokens = max(r.PromptTokens, t.PromptTokens)
		for _, p := range t.ProcessUs {
			process = append(process, float64(p))
		}
	}
	n := float64(len(ts))
	if polls > 0 {
		r.ReadUnitsPerPoll = units / polls
		r.MeanItemKB = item / polls / 1024
		r.EventsCPUPerPollU = cpu * 1000 / polls
	}
	if streamMs > 0 {
		r.ReadUnitsPerSec = units / (streamMs / 1000)
	}
	if n > 0 {
		r.Events, r.StreamKB = events/n, bytes/n/1024
	}
	sort.Float64s(process)
	r.ProcessP50Us, r.ProcessP95Us = quantile(process, 0.5), quantile(process, 0.95)
	return r
}

func writeWatch(o options, r results) error {
	// The scale model's own types (bench/scale), so the file is one it reads.
	w := scale.Watched{
		Note: "What a watched turn's stream costs, measured by bench/cmd/turnshapes (make memsize's driver) on the production turn and events functions: " +
			"each shape's turns watched from admission to run.finished, every poll's run item sized as DynamoDB sizes it and its strongly consistent read units counted. Never edited by hand.",
		Source: fmt.Sprintf("make scale-watch (bench/cmd/turnshapes -rounds %d -ttft %s -interval %s -watch), no CPU quota", o.rounds, o.ttft, o.interval),
		Date:   time.Now().UTC().Format(time.DateOnly), TTFTMs: r.TTFTMs, IntervalMs: r.IntervalMs,
	}
	for _, s := range r.Shapes {
		w.Shapes = append(w.Shapes, scale.WatchedShape{
			Name: s.Name, Turns: s.Turns, Calls: s.Calls, StreamSeconds: round(s.StreamMs.Median/1000, 2), Polls: s.Polls.Median,
			ReadUnitsPerPoll: round(s.ReadUnitsPerPoll, 3), MeanItemKB: round(s.MeanItemKB, 2), MaxItemKB: round(s.MaxItemKB, 2),
			Events: round(s.Events, 1), StreamKB: round(s.StreamKB, 2), EventsCPUMs: round(s.EventsCPUMs.Median, 2), TurnCPUMs: round(s.TurnCPUMs.Median, 2),
		})
	}
	b, err := json.MarshalIndent(w, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.watchOut, append(b, '\n'), 0o644)
}

func round(v float64, digits int) float64 {
	p := 1.0
	for range digits {
		p *= 10
	}
	return float64(int64(v*p+0.5)) / p
}
