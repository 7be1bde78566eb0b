package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"time"

	"github.com/commonly/runtime/bench/internal/childproc"
	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/localstack"
)

// sideRun is one process's measurement.
type sideRun struct {
	cpuMs, wallMs float64 // per turn
	sysMs         float64 // per turn, the kernel's part of cpuMs
	peakRSSMiB    float64
	ddb           localstack.Calls // total over the measured turns (ours)
	modelCalls    float64          // per turn
	floorDDB      int              // DynamoDB calls per request (the floor)
	turns         int
	info          map[string]string
}

func (r sideRun) String() string {
	s := fmt.Sprintf("%.3f ms CPU/turn (%.3f ms kernel), %.3f ms wall/turn, peak RSS %.1f MiB, %.2f model calls/turn", r.cpuMs, r.sysMs, r.wallMs, r.peakRSSMiB, r.modelCalls)
	if r.ddb != nil {
		s += fmt.Sprintf(", %.2f DynamoDB calls/turn (%s)", float64(r.ddb.Total())/float64(r.turns), r.ddb.PerTurn(r.turns))
	}
	return s
}

// turnProc is a running turn process (bench/cmd/turnproc).
type turnProc struct{ *childproc.Proc }

// startTurnproc starts o.turnproc with args and waits until it serves.
func startTurnproc(ctx context.Context, o options, args []string) (*turnProc, error) {
	p, err := childproc.Start(ctx, o.turnproc, args...)
	if err != nil {
		return nil, err
	}
	return &turnProc{p}, nil
}

// fail adds the end of the process's log to err.
func (p *turnProc) fail(err error) (sideRun, error) {
	return sideRun{}, fmt.Errorf("%w\nturn process log:\n%s", err, tail(p.Stderr.String(), 2000))
}

// measure runs o.warmup then o.turns turns, and reads the process's usage
// and the scripted model's counts around the measured ones.
func (p *turnProc) measure(ctx context.Context, o options, model *script.Server, turn func() (time.Duration, error)) (sideRun, error) {
	for range o.warmup {
		if _, err := turn(); err != nil {
			return p.fail(err)
		}
	}
	var s0, s1 turnstack.Stats
	err := p.Stats(ctx, &s0)
	if err != nil {
		return p.fail(err)
	}
	m0 := model.Counts()
	var wall time.Duration
	for range o.turns {
		w, err := turn()
		if err != nil {
			return p.fail(err)
		}
		wall += w
	}
	err = p.Stats(ctx, &s1)
	if err != nil {
		return p.fail(err)
	}
	m1 := model.Counts()
	if m1.Rejected != m0.Rejected {
		return p.fail(fmt.Errorf("the scripted model rejected %d requests", m1.Rejected-m0.Rejected))
	}
	n := float64(o.turns)
	return sideRun{
		cpuMs:      float64(s1.Proc.CPU-s0.Proc.CPU) / 1e6 / n,
		sysMs:      float64(s1.Proc.Sys-s0.Proc.Sys) / 1e6 / n,
		wallMs:     float64(wall) / 1e6 / n,
		peakRSSMiB: float64(s1.Proc.PeakRSSKB) / 1024,
		ddb:        s1.DynamoDB.Sub(s0.DynamoDB),
		modelCalls: float64(m1.Requests-m0.Requests) / n,
		turns:      o.turns,
	}, nil
}

// side is a turn process on a fresh local stack of stand-ins served by
// this process (its embedded DynamoDB), and a client of its API.
type side struct {
	st     *localstack.Stack
	p      *turnProc
	client *turnstack.Client
}

// startSide starts the DynamoDB and the turn process with args (besides
// -llm and -dynamo); close stops both.
func startSide(ctx context.Context, o options, llmURL string, args ...string) (*side, error) {
	st, err := localstack.Start(ctx, localstack.Config{Env: turnstack.Env(nil)})
	if err != nil {
		return nil, err
	}
	p, err := startTurnproc(ctx, o, append([]string{"-llm", llmURL, "-dynamo", st.DynamoDBURL}, args...))
	if err != nil {
		st.Close()
		return nil, err
	}
	client, err := turnstack.NewClient(p.Ready["api"])
	if err != nil {
		p.Stop()
		st.Close()
		return nil, err
	}
	return &side{st: st, p: p, client: client}, nil
}

func (s *side) close() {
	s.client.HTTP.CloseIdleConnections()
	s.p.Stop()
	s.st.Close()
}

// runOurs starts a turn process and drives turns through its API.
func runOurs(ctx context.Context, o options, run int, model *script.Server, llmURL string) (sideRun, error) {
	var args []string
	if o.profileDir != "" {
		args = append(args, "-cpuprofile", filepath.Join(o.profileDir, fmt.Sprintf("turnproc-%d.cpu", run)),
			"-memprofile", filepath.Join(o.profileDir, fmt.Sprintf("turnproc-%d.mem", run)))
	}
	s, err := startSide(ctx, o, llmURL, args...)
	if err != nil {
		return sideRun{}, err
	}
	defer s.close()
	if err := s.client.CreateInstall(ctx); err != nil {
		return s.p.fail(err)
	}
	return s.p.measure(ctx, o, model, s.turn(ctx))
}

// turn is one turn through the side's API, checked, with its wall time.
func (s *side) turn(ctx context.Context) func() (time.Duration, error) {
	return func() (time.Duration, error) {
		// Only the request is timed: checking the run is the driver's work.
		start := time.Now()
		_, body, err := s.client.TurnRequest(ctx)
		wall := time.Since(start)
		if err != nil {
			return 0, err
		}
		_, err = turnstack.CheckRun(body)
		return wall, err
	}
}

// runFloor starts the turn process as the floor (bench/internal/floor),
// making the script's model calls and ddbCalls DynamoDB calls per
// request, and drives it like runOurs.
func runFloor(ctx context.Context, o options, model *script.Server, llmURL string, ddbCalls int) (sideRun, error) {
	s, err := startSide(ctx, o, llmURL, "-floor", strconv.Itoa(ddbCalls))
	if err != nil {
		return sideRun{}, err
	}
	defer s.close()
	r, err := s.p.measure(ctx, o, model, func() (time.Duration, error) {
		start := time.Now()
		err := s.client.Floor(ctx)
		return time.Since(start), err
	})
	r.ddb = nil // the floor's calls bypass the SDK and its counter
	r.floorDDB = ddbCalls
	return r, err
}

// runPeer runs the peer's script in a node process of its own; it
// measures itself and prints one JSON line.
func runPeer(ctx context.Context, o options, model *script.Server, llmURL string) (sideRun, error) {
	cmd := exec.CommandContext(ctx, o.node, filepath.Join(o.peerDir, "peer.mjs"),
		"--base-url", llmURL, "--turns", strconv.Itoa(o.turns), "--warmup", strconv.Itoa(o.warmup),
		"--model", turnstack.Model, "--api-key", turnstack.APIKey, "--message", turnstack.Message,
		"--instructions", turnstack.SystemPrompt("bench-agent"))
	cmd.Dir = o.peerDir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	m0 := model.Counts()
	if err := cmd.Run(); err != nil {
		return sideRun{}, fmt.Errorf("%s: %w\n%s", o.node, err, tail(stderr.String(), 2000))
	}
	m1 := model.Counts()
	var res struct {
		Turns     int     `json:"turns"`
		CPUMs     float64 `json:"cpuMs"`
		SysMs     float64 `json:"sysMs"`
		WallMs    float64 `json:"wallMs"`
		PeakRSSKB float64 `json:"peakRssKB"`
		Node      string  `json:"node"`
		Agents    string  `json:"agents"`
		OpenAI    string  `json:"openai"`
	}
	if err := json.Unmarshal(bytes.TrimSpace(stdout.Bytes()), &res); err != nil || res.Turns != o.turns {
		return sideRun{}, fmt.Errorf("peer output %q: %v", stdout.String(), err)
	}
	if m1.Rejected != m0.Rejected {
		return sideRun{}, fmt.Errorf("the scripted model rejected %d of the peer's requests", m1.Rejected-m0.Rejected)
	}
	n := float64(res.Turns)
	return sideRun{
		cpuMs: res.CPUMs / n, sysMs: res.SysMs / n, wallMs: res.WallMs / n, peakRSSMiB: res.PeakRSSKB / 1024,
		// The warm-up's calls are in the count too: the peer measures itself.
		modelCalls: float64(m1.Requests-m0.Requests) / float64(o.turns+o.warmup),
		turns:      res.Turns,
		info:       map[string]string{"node": res.Node, "agents": res.Agents, "openai": res.OpenAI},
	}, nil
}

// summary is the medians of a side's runs.
type summary struct {
	runs                                               int
	cpuMs, sysMs, wallMs, peakRSSMiB, modelCalls, ddbN float64
	cpuMin, cpuMax                                     float64
	ddb                                                localstack.Calls
	turns                                              int
}

func summarize(rs []sideRun) summary {
	pick := func(f func(sideRun) float64) []float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		return v
	}
	cpu := pick(func(r sideRun) float64 { return r.cpuMs })
	s := summary{
		runs:       len(rs),
		cpuMs:      median(cpu),
		sysMs:      median(pick(func(r sideRun) float64 { return r.sysMs })),
		wallMs:     median(pick(func(r sideRun) float64 { return r.wallMs })),
		peakRSSMiB: median(pick(func(r sideRun) float64 { return r.peakRSSMiB })),
		modelCalls: median(pick(func(r sideRun) float64 { return r.modelCalls })),
		cpuMin:     minOf(cpu), cpuMax: maxOf(cpu),
	}
	if rs[0].floorDDB > 0 {
		s.ddbN = median(pick(func(r sideRun) float64 { return float64(r.floorDDB) }))
	}
	if rs[0].ddb != nil {
		s.ddbN = median(pick(func(r sideRun) float64 { return float64(r.ddb.Total()) / float64(r.turns) }))
		// The breakdown of the median run by calls.
		sorted := append([]sideRun(nil), rs...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i].ddb.Total() < sorted[j].ddb.Total() })
		s.ddb, s.turns = sorted[len(sorted)/2].ddb, sorted[len(sorted)/2].turns
	}
	return s
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func minOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = min(m, x)
	}
	return m
}

func maxOf(v []float64) float64 {
	m := v[0]
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
