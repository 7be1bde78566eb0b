package load

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/turns"
)

// Measured is the measured-figures file (bench/scale/measured.json) the
// scale model reads: what a turn costs in DynamoDB, from this run.
type Measured struct {
	// Source is the command that measured it; Date the UTC day.
	Source string `json:"source"`
	Date   string `json:"date"`
	// Turns is the runs admitted, which the figures are divided by.
	Turns int `json:"turns"`
	// DynamoDBCallsPerTurn is by table ("a+b" for a transaction over two)
	// and operation; WriteUnitsPerTurn by table and by "table" or
	// "index <name>" (units.go says how they are counted).
	// The turn function's and the alarm function's calls; the reaper's,
	// which follow its schedule rather than the turns, are a sweep's.
	DynamoDBCallsPerTurn map[string]map[string]float64 `json:"dynamodbCallsPerTurn"`
	ReaperCallsPerSweep  map[string]map[string]float64 `json:"reaperCallsPerSweep"`
	// Every function's writes, the reaper's included.
	WriteUnitsPerTurn map[string]map[string]float64 `json:"writeUnitsPerTurn"`
	PeakOpenRuns      int                           `json:"peakOpenRuns"`
	// TurnsPerSecond and the admission latency are this machine's.
	TurnsPerSecond     float64 `json:"turnsPerSecond"`
	AdmissionP50Millis float64 `json:"admissionP50Millis"`
	AdmissionP99Millis float64 `json:"admissionP99Millis"`
}

// WriteFile writes m as indented JSON.
func (m Measured) WriteFile(path string) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

type report struct {
	cfg      Config
	results  []done
	snap     *snapshot
	elapsed  time.Duration
	drained  time.Duration
	settled  time.Duration
	st       *stack
	inj      *injected
	obs      *observer
	peakOpen int
	// sweepsBefore were swept before the accounting started.
	sweepsBefore int
}

func (r report) admitted() int { return len(r.snap.runs) }

func (r report) sweeps() int {
	r.st.sweeps.mu.Lock()
	defer r.st.sweeps.mu.Unlock()
	return r.st.sweeps.n - r.sweepsBefore
}

func merge(ms ...map[string]map[string]float64) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for _, m := range ms {
		for t, ops := range m {
			for op, v := range ops {
				add(out, t, op, v)
			}
		}
	}
	return out
}

func perTurn(m map[string]map[string]float64, turns int) map[string]map[string]float64 {
	out := map[string]map[string]float64{}
	for t, ops := range m {
		out[t] = map[string]float64{}
		for op, v := range ops {
			out[t][op] = math.Round(1000*v/float64(max(turns, 1))) / 1000
		}
	}
	return out
}

func (r report) measured() Measured {
	r.obs.mu.Lock()
	defer r.obs.mu.Unlock()
	adm := append([]time.Duration(nil), r.obs.admissions...)
	sortDurations(adm)
	return Measured{
		Source: strings.TrimSpace("go run ./bench/load " + strings.Join(os.Args[1:], " ")), Date: time.Now().UTC().Format(time.DateOnly),
		Turns:                r.admitted(),
		DynamoDBCallsPerTurn: perTurn(merge(r.obs.usage.calls[fnTurn], r.obs.usage.calls[fnAlarm]), r.admitted()),
		ReaperCallsPerSweep:  perTurn(r.obs.usage.calls[fnReaper], r.sweeps()),
		WriteUnitsPerTurn:    perTurn(r.obs.usage.units, r.admitted()),
		PeakOpenRuns:         r.peakOpen,
		TurnsPerSecond:       math.Round(10*float64(r.admitted())/r.elapsed.Seconds()) / 10,
		AdmissionP50Millis:   millis(percentile(adm, 0.50)),
		AdmissionP99Millis:   millis(percentile(adm, 0.99)),
	}
}

func millis(d time.Duration) float64 { return math.Round(float64(d)/1e4) / 100 }

func (r report) print(w io.Writer) {
	m := r.measured()
	outcomes := map[string]int{}
	retried := 0
	for _, d := range r.results {
		a := d.outcome()
		switch {
		case a.err != nil:
			outcomes["no answer"]++
		case a.status == http.StatusOK || a.status == http.StatusAccepted:
			outcomes["admitted"]++
		default:
			outcomes[fmt.Sprintf("%d %s", a.status, strings.TrimPrefix(a.problem, "https://"))]++
		}
		if len(d.attempts) > 1 {
			retried++
		}
	}
	fmt.Fprintf(w, "drove %d turns in %s (%d retried with the same key); all runs closed %s later, the alarm function caught up with the runs stream %s after that\n",
		len(r.results), r.elapsed.Round(time.Millisecond), retried, r.drained.Round(time.Millisecond), r.settled.Round(time.Millisecond))
	if taken := r.st.streams.closedRuns(); taken < r.admitted() {
		fmt.Fprintf(w, "WARNING: the alarm function had taken the final records of %d of %d runs when the wait for it ended (%s): the ledger and alarm lines below are not final\n",
			taken, r.admitted(), settleLimit)
	}
	fmt.Fprintf(w, "answers: %s\n", mapLine(outcomes))
	fmt.Fprintf(w, "turns/s: %.1f (runs admitted %d); admission latency p50 %.2f ms, p99 %.2f ms; peak open runs %d\n",
		m.TurnsPerSecond, m.Turns, m.AdmissionP50Millis, m.AdmissionP99Millis, m.PeakOpenRuns)
	fmt.Fprintf(w, "DynamoDB calls a turn (turn and alarm functions): %s\n", nestedLine(m.DynamoDBCallsPerTurn))
	fmt.Fprintf(w, "  turn function: %s\n", nestedLine(perTurn(r.obs.usage.calls[fnTurn], r.admitted())))
	fmt.Fprintf(w, "  alarm function: %s\n", nestedLine(perTurn(r.obs.usage.calls[fnAlarm], r.admitted())))
	fmt.Fprintf(w, "DynamoDB calls a reaper sweep: %s\n", nestedLine(m.ReaperCallsPerSweep))
	fmt.Fprintf(w, "write units a turn: %s\n", nestedLine(m.WriteUnitsPerTurn))
	r.st.sweeps.mu.Lock()
	fmt.Fprintf(w, "reaper: %d sweeps (%d failed), %d sandboxes killed, %d already gone, %d runs closed interrupted (%d refunded)\n",
		r.st.sweeps.n, r.st.sweeps.failed, r.st.sweeps.killed, r.st.sweeps.gone, r.st.sweeps.runsInterrupted, r.st.sweeps.runsRefunded)
	r.st.sweeps.mu.Unlock()
	refused := 0
	for _, c := range r.st.e2b.Creates() {
		if c.Status == http.StatusServiceUnavailable {
			refused++
		}
	}
	faults := map[string]int{}
	for _, f := range turnFaults {
		faults[string(f)] = r.inj.get(string(f))
	}
	faults["sandbox creates refused (E2B)"] = refused
	faults["stream batches redelivered"] = int(r.st.streams.redelivered.Load())
	faults["eventbridge-put-failed"] = r.st.busFaults.injected(r.st.Bus)
	faults["sandbox-leaked"] = r.inj.get("sandbox-leaked")
	faults["workers stalled"] = int(r.st.stall.calls.Load())
	fmt.Fprintf(w, "faults injected: %s\n", mapLine(faults))
	r.printKills(w)
	fmt.Fprintf(w, "model calls %d; E2B calls %s; alarm batches %d; alarm events %d\n",
		r.st.model.Responded(), mapLine(e2bCalls(r.st.e2b)), r.st.streams.batches.Load(), len(r.snap.alarms))
}

func e2bCalls(f *e2btest.Fake) map[string]int { return f.Calls() }

func mapLine(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func nestedLine(m map[string]map[string]float64) string {
	tables := make([]string, 0, len(m))
	for t := range m {
		tables = append(tables, t)
	}
	sort.Strings(tables)
	var parts []string
	for _, t := range tables {
		ops := make([]string, 0, len(m[t]))
		for op := range m[t] {
			ops = append(ops, op)
		}
		sort.Strings(ops)
		var in []string
		for _, op := range ops {
			in = append(in, fmt.Sprintf("%s %g", op, m[t][op]))
		}
		parts = append(parts, t+": "+strings.Join(in, ", "))
	}
	return strings.Join(parts, "; ")
}

// printKills reports the killed workers, the resumed runs and how long a
// killed run took to come back, here and as it would in AWS.
func (r report) printKills(w io.Writer) {
	points := map[string]int{}
	for _, p := range r.st.kills.killedRuns() {
		points[string(p)]++
	}
	resumed, lostAttempts := 0, 0
	var lost money.Micros
	for _, run := range r.snap.runs {
		if run.Attempts > 1 {
			resumed++
		}
		lostAttempts += len(run.LostAttempts)
		lost += run.Cost.LostMicros
	}
	fmt.Fprintf(w, "workers killed %d (%s); runs resumed %d (%d lost attempts, estimated at %d µ$); DynamoDB answers cut after they were applied %s\n",
		len(r.st.kills.killedRuns()), mapLine(points), resumed, lostAttempts, lost, mapLine(r.st.kills.answersCut()))
	rs := r.st.kills.resumes()
	if len(rs.totals) == 0 {
		return
	}
	speed := r.cfg.Speed
	wait, work := percentile(rs.waits, 0.5), percentile(rs.works, 0.5)
	fmt.Fprintf(w, "from a worker's death to its run's next model call, locally: p50 %s, max %s (%d runs; %d more made none); the wait for the next attempt p50 %s (%s of the stack's clock ×%g, on which the %s lease lapses in %s; the stand-in retries after %s, the reaper sweeps every %s), the attempt's work up to the call p50 %s, max %s\n",
		round(percentile(rs.totals, 0.5)), round(rs.totals[len(rs.totals)-1]), len(rs.totals), rs.noModel,
		round(wait), round(time.Duration(float64(wait)*speed)), speed, turns.LeaseDuration, round(time.Duration(float64(turns.LeaseDuration)/speed)),
		lambdalocal.DefaultRetryDelay, r.cfg.ReaperInterval, round(work), round(rs.works[len(rs.works)-1]))
	best, median, worst := awsWait()
	fmt.Fprintf(w, "  in AWS: Lambda's first retry after about %s, or the reaper's sweep (every %s) once the %s lease lapsed, whichever first: a wait of %s to %s (median %s); with this run's work, about %s (%s to %s)\n",
		awsFirstRetry, awsSweepEvery, turns.LeaseDuration, best, worst, median, round(median+work), round(best+work), round(worst+rs.works[len(rs.works)-1]))
}

func round(d time.Duration) time.Duration {
	if d >= 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
