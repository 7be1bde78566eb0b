package scale

import (
	"fmt"
	"math"
	"strconv"

	eventshandler "github.com/commonly/runtime/functions/events/handler"
	"github.com/commonly/runtime/shared/turns"
)

// The events function's own settings, from its code: how often a stream
// reads the run, and how long one response may last before the client
// resumes it.
var (
	pollSeconds      = turns.DefaultWatchPoll.Seconds()
	streamMaxSeconds = eventshandler.DefaultMaxStream.Seconds()
	// maxTurnSeconds is one attempt's longest run (the worker's timeout).
	maxTurnSeconds = turns.MaxTurnDuration.Seconds()
)

// Watched is watch.json: what a watched turn's stream costs, measured
// by bench/cmd/turnshapes on the production turn and events functions.
type Watched struct {
	Note       string         `json:"note"`
	Source     string         `json:"source"`
	Date       string         `json:"date"`
	TTFTMs     float64        `json:"ttftMs"`
	IntervalMs float64        `json:"intervalMs"`
	Shapes     []WatchedShape `json:"shapes"`
}

// WatchedShape is one shape's turns (bench/internal/shapes).
type WatchedShape struct {
	Name             string  `json:"name"`
	Turns            int     `json:"turns"`
	Calls            int     `json:"calls"`
	StreamSeconds    float64 `json:"streamSeconds"`
	Polls            float64 `json:"polls"`
	ReadUnitsPerPoll float64 `json:"readUnitsPerPoll"`
	MeanItemKB       float64 `json:"meanItemKB"`
	MaxItemKB        float64 `json:"maxItemKB"`
	Events           float64 `json:"events"`
	StreamKB         float64 `json:"streamKB"`
	EventsCPUMs      float64 `json:"eventsCpuMs"`
	TurnCPUMs        float64 `json:"turnCpuMs"`
}

func (w Watched) check() error {
	if w.Source == "" || w.Date == "" || len(w.Shapes) == 0 {
		return fmt.Errorf("watch.json: no source, date or shapes")
	}
	for _, s := range w.Shapes {
		if s.ReadUnitsPerPoll < 1 || s.StreamSeconds <= 0 || s.Polls <= 0 || s.Events <= 0 {
			return fmt.Errorf("watch.json: shape %s has no stream, polls, events or read units (a read is at least one unit)", s.Name)
		}
	}
	return nil
}

// mean is f averaged over the shapes, each shape as likely, and the
// shapes' least and most.
func (w Watched) mean(f func(WatchedShape) float64) (mean, lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range w.Shapes {
		v := f(s)
		mean += v
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	return mean / float64(len(w.Shapes)), lo, hi
}

// ReadUnitsPerPoll is a poll's strongly consistent read units, the run
// item growing through the turn, over the shapes.
func (w Watched) ReadUnitsPerPoll() (mean, lo, hi float64) {
	return w.mean(func(s WatchedShape) float64 { return s.ReadUnitsPerPoll })
}

// EventsPerSecond is how many events a stream carries a second of a turn.
func (w Watched) EventsPerSecond() float64 {
	m, _, _ := w.mean(func(s WatchedShape) float64 { return s.Events / s.StreamSeconds })
	return m
}

// KBPerEvent is a stream's bytes an event (the SSE framing included).
func (w Watched) KBPerEvent() float64 {
	m, _, _ := w.mean(func(s WatchedShape) float64 { return s.StreamKB / s.Events })
	return m
}

// CPUMillisPerPoll is the events function's CPU a poll at a full core.
func (w Watched) CPUMillisPerPoll() float64 {
	m, _, _ := w.mean(func(s WatchedShape) float64 { return s.EventsCPUMs / s.Polls })
	return m
}

// ownMillis is the turn function's own time a turn at mb, as measured.
func (m Model) ownMillis(mb float64) (float64, bool) {
	v, ok := m.In.Turn.OwnMillisAtMB[strconv.Itoa(int(mb))]
	return v, ok
}

// waitSeconds is a turn's wall outside its own work: the model's calls,
// the code runs of the turns that run code, and its API requests.
func (m Model) waitSeconds() float64 {
	t := m.In.Turn
	return t.ModelCallsPerTurn*t.ModelSecondsPerCall + m.In.CodeShare*t.CodeRunsPerSandbox*t.CodeRunSeconds
}

// apiSeconds is a turn's API requests' time.
func (m Model) apiSeconds() float64 { return m.In.Turn.APIRequestsPerTurn * m.In.Turn.APIMillis / 1000 }

// workerSeconds is the worker's wall at the turn function's mb.
func (m Model) workerSeconds(mb float64) float64 {
	own, _ := m.ownMillis(mb)
	return m.waitSeconds() + own/1000
}

// Watcher is what watching costs a turn (every turn's share: a turn
// watched by WatchersPerTurn streams, a WatchedShare of turns), with
// the events function at MB and the turn function at TurnMB.
type Watcher struct {
	MB, TurnMB float64
	// Streams a turn; a stream's mean seconds; its worst (a turn resumed
	// to its last attempt) and the reconnects a stream makes.
	Streams, StreamSeconds, WorstSeconds, Reconnects float64
	Polls, ReadUnits                                 float64 // a turn
	Events                                           float64 // a stream
	// Costs a turn, USD. DataOut is not infrastructure's (the target
	// counts Lambda, DynamoDB, EventBridge and logs).
	Lambda, Reads, Slots, Logs, DataOut float64
}

// Total is the watcher's infrastructure cost a turn.
func (w Watcher) Total() float64 { return w.Lambda + w.Reads + w.Slots + w.Logs }

// watcher is the events function's cost a turn at mb, the turn function
// at turnMB.
func (m Model) watcher(mb, turnMB float64) Watcher {
	in, w := m.In, m.In.Watch
	price := func(k string) float64 { return in.Prices[k].USD }
	x := Watcher{MB: mb, TurnMB: turnMB, Streams: w.WatchedShare * w.WatchersPerTurn}
	// A stream opens at the turn's admission and ends at the first poll
	// after its final write (half a poll later on average); a resumed
	// turn keeps it open through the retry's delay and the lost attempt
	// (half a turn on average).
	wall := m.workerSeconds(turnMB) + m.apiSeconds()
	x.StreamSeconds = wall + pollSeconds/2 + w.ResumedShare*(w.RetryDelaySeconds+wall/2)
	// The longest stream: every attempt to its timeout, and Lambda's
	// retries between them (the k-th after k × the delay).
	x.WorstSeconds = math.Max(1, w.MaxAttempts) * maxTurnSeconds
	for k := 1; k < int(w.MaxAttempts); k++ {
		x.WorstSeconds += float64(k) * w.RetryDelaySeconds
	}
	x.Reconnects = math.Floor(x.StreamSeconds / streamMaxSeconds)
	if x.WorstSeconds > streamMaxSeconds {
		x.Reconnects += w.ResumedShare * math.Floor(x.WorstSeconds/streamMaxSeconds)
	}
	invocations := x.Streams * (1 + x.Reconnects)
	perPoll, _, _ := m.Watched.ReadUnitsPerPoll()
	x.Polls = x.Streams * x.StreamSeconds / pollSeconds
	x.ReadUnits = x.Polls * perPoll
	x.Events = m.Watched.EventsPerSecond() * wall
	x.Lambda = x.Streams*mb/1024*x.StreamSeconds*price("lambdaGBSecond") + invocations*price("lambdaRequest")
	x.Reads = x.ReadUnits * price("ddbReadUnit")
	x.Slots = invocations * w.SlotWriteUnitsPerStream * price("ddbWriteUnit")
	x.Logs = invocations * w.LogBytesPerStream / 1e9 * price("logsIngestGB")
	x.DataOut = x.Streams * x.Events * m.Watched.KBPerEvent() / 1e6 * price("dataOutGB")
	return x
}
