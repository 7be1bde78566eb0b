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
