package runs

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// Text is coalesced to at most one delta each TextInterval, the rest
// before the next event; ids increase from after the events the run has;
// every data is one JSON object repeating its type and id.
func TestEventLogCoalescesTextAndNumbers(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	kicks := 0
	l := NewEventLog([]StoredEvent{{ID: 1, Type: EventRunStarted, Data: "{}"}}, func() time.Time { return now }, func() { kicks++ })
	l.Record(ModelStarted{Step: 0, Model: "m"})
	for _, s := range []string{"a", "b", "c"} {
		l.Record(TextDelta{Step: 0, Text: s})
		now = now.Add(100 * time.Millisecond)
	}
	// "a" goes at once; "b" (100 ms) and "c" (200 ms) are held; "d" at
	// 300 ms lets the three go together.
	l.Record(TextDelta{Step: 0, Text: "d"})
	l.Record(ModelFinished{Step: 0, Model: "m", CostMicros: 7})
	evs := l.Snapshot()
	var texts []string
	for i, e := range evs {
		if e.ID != int64(i+1) {
			t.Fatalf("ids %+v", evs)
		}
		var d map[string]any
		if err := json.Unmarshal([]byte(e.Data), &d); err != nil || i > 0 && (d["type"] != string(e.Type) || d["id"] != float64(e.ID)) {
			t.Fatalf("data %q: %v", e.Data, err)
		}
		if e.Type == EventTextDelta {
			texts = append(texts, d["text"].(string))
		}
	}
	if strings.Join(texts, "|") != "a|bcd" || evs[len(evs)-1].Type != EventModelFinished || l.LastID() != int64(len(evs)) {
		t.Fatalf("texts %q, events %+v", texts, evs)
	}
	if kicks != 4 {
		t.Errorf("%d kicks, want one per stored event (4)", kicks)
	}
}

// A run's stored text is bounded; other events still go.
func TestEventLogBoundsText(t *testing.T) {
	l := NewEventLog(nil, nil, nil)
	big := strings.Repeat("x", 1000)
	for range MaxEventText/1000 + 10 {
		l.Record(TextDelta{Text: big})
	}
	l.Record(ToolStarted{Name: "t"})
	n := 0
	for _, e := range l.Snapshot() {
		if e.Type == EventTextDelta {
			var d TextDelta
			_ = json.Unmarshal([]byte(e.Data), &d)
			n += len(d.Text)
		}
	}
	if n != MaxEventText || l.Snapshot()[len(l.Snapshot())-1].Type != EventToolStarted {
		t.Fatalf("%d bytes of text stored", n)
	}
}

// The run item keeps its events as one string and reads back the same
// events, text with line breaks included.
func TestEventsEncodeAsOneString(t *testing.T) {
	l := NewEventLog(nil, nil, nil)
	l.Record(RunStarted{Engine: "native"})
	l.Record(TextDelta{Text: "two\nlines"})
	l.Record(ToolFinished{Name: "t", Output: "a\r\nb"})
	evs := l.Snapshot()
	got, err := DecodeEvents(EncodeEvents(evs))
	if err != nil || len(got) != 3 {
		t.Fatalf("%v %v", got, err)
	}
	for i := range evs {
		if got[i] != evs[i] {
			t.Errorf("event %d: %+v, want %+v", i, got[i], evs[i])
		}
	}
	if _, err := DecodeEvents("{}\nnot json"); err == nil {
		t.Error("a broken line decoded")
	}
}

// A code run's output is coalesced per call and stream like text, held
// output kicks the flusher (a silent run still shows what it printed),
// and the run's stored output is bounded.
func TestEventLogCoalescesToolOutput(t *testing.T) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	kicks := 0
	l := NewEventLog(nil, func() time.Time { return now }, func() { kicks++ })
	out := func(stream, text string) { l.Record(ToolOutput{Step: 1, CallID: "c1", Stream: stream, Text: text}) }
	out("stdout", "a") // at once
	now = now.Add(100 * time.Millisecond)
	out("stdout", "b") // held, kicked
	out("stdout", "c")
	out("stderr", "e") // another stream: b+c go, e held
	now = now.Add(300 * time.Millisecond)
	out("stderr", "f") // past the interval: e+f go
	l.Record(ToolFinished{Step: 1, CallID: "c1", OK: true})
	var got []string
	for _, e := range l.Snapshot() {
		if e.Type == EventToolOutput {
			var o ToolOutput
			_ = json.Unmarshal([]byte(e.Data), &o)
			if o.CallID != "c1" || o.Step != 1 {
				t.Errorf("%+v", o)
			}
			got = append(got, o.Stream+":"+o.Text)
		}
	}
	if strings.Join(got, "|") != "stdout:a|stdout:bc|stderr:ef" {
		t.Fatalf("outputs %q", got)
	}
	if kicks < 6 {
		t.Errorf("%d kicks: a held output must kick", kicks)
	}

	big := strings.Repeat("x", 1000)
	b := NewEventLog(nil, nil, nil)
	for range MaxEventToolOutput/1000 + 10 {
		b.Record(ToolOutput{CallID: "c", Stream: "stdout", Text: big})
	}
	n := 0
	for _, e := range b.Snapshot() {
		var o ToolOutput
		_ = json.Unmarshal([]byte(e.Data), &o)
		n += len(o.Text)
	}
	if n != MaxEventToolOutput {
		t.Errorf("%d bytes of output stored", n)
	}
}

// Times never go backwards in id order: not when the clock does, nor
// after a resume from events stamped later by another clock.
func TestEventLogTimesNeverGoBackwards(t *testing.T) {
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	clock := []time.Time{t0, t0.Add(-time.Second), t0.Add(time.Second)}
	i := 0
	l := NewEventLog([]StoredEvent{{ID: 1, Type: EventRunStarted, Data: EncodeEvent(1, RunStarted{Engine: "native"}, t0.Add(500*time.Millisecond))}},
		func() time.Time { c := clock[min(i, len(clock)-1)]; i++; return c }, nil)
	for range 3 {
		l.Record(ModelStarted{Model: "m"})
	}
	var last time.Time
	for _, e := range l.Snapshot() {
		at := eventTime(e.Data)
		if at.Before(last) {
			t.Fatalf("event %d at %s, before %s", e.ID, at, last)
		}
		last = at
	}
	if !last.Equal(t0.Add(time.Second)) {
		t.Errorf("the last event at %s", last)
	}
}
