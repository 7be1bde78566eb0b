package runs

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/commonly/runtime/shared/textcap"
)

// Bounds of a run's stored events: they live on the run item, which
// DynamoDB caps at 400 KB beside the steps and the final message.
const (
	// TextInterval coalesces answer text: at most one text.delta this
	// often while the model writes, and the rest before any other event.
	TextInterval = 250 * time.Millisecond
	// MaxEventText bounds the text.delta text a run stores; past it the
	// deltas stop (run.finished still carries the final message).
	MaxEventText = 64 << 10
	// MaxEventOutput bounds a tool.finished output, as the run bounds an
	// error message.
	MaxEventOutput = MaxErrorMessage
)

// EventLog numbers a run's events, coalesces its text and keeps them for
// the run's writes. Its methods are safe for concurrent use: the turn
// records, a flusher snapshots.
type EventLog struct {
	mu     sync.Mutex
	now    func() time.Time
	events []StoredEvent
	next   int64
	// pending is answer text not yet an event, of step textStep.
	pending   strings.Builder
	textStep  int
	lastText  time.Time
	textBytes int
	// onRecord is told after each stored event (the flusher's kick).
	onRecord func()
}

// NewEventLog starts a run's log after the events it already has (a run
// read back from the store), numbering from the next id. now nil is
// time.Now; onRecord, optional, is called after each event is stored,
// outside the log's lock.
func NewEventLog(have []StoredEvent, now func() time.Time, onRecord func()) *EventLog {
	if now == nil {
		now = time.Now
	}
	l := &EventLog{now: now, events: slices.Clone(have), onRecord: onRecord}
	for _, e := range have {
		l.next = max(l.next, e.ID)
	}
	return l
}

// Record stores d as the run's next event. A TextDelta is held and
// coalesced: it becomes an event once TextInterval has passed since the
// last one, or before the next event of another type.
func (l *EventLog) Record(d EventData) {
	if l == nil || d == nil {
		return
	}
	l.mu.Lock()
	stored := false
	if t, ok := d.(TextDelta); ok {
		if t.Step != l.textStep {
			stored = l.flushText()
			l.textStep = t.Step
		}
		if l.textBytes < MaxEventText && t.Text != "" {
			room := MaxEventText - l.textBytes
			text := textcap.Bytes(t.Text, room)
			l.pending.WriteString(text)
			l.textBytes += len(text)
		}
		if l.now().Sub(l.lastText) >= TextInterval {
			stored = l.flushText() || stored
		}
	} else {
		l.flushText()
		l.store(d)
		stored = true
	}
	l.mu.Unlock()
	if stored && l.onRecord != nil {
		l.onRecord()
	}
}

// Snapshot is every event so far, pending text included, for a write.
func (l *EventLog) Snapshot() []StoredEvent {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushText()
	return slices.Clone(l.events)
}

// LastID is the id of the last stored event, 0 before any.
func (l *EventLog) LastID() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.next
}

// flushText turns the pending text into an event; l.mu is held.
func (l *EventLog) flushText() bool {
	if l.pending.Len() == 0 {
		return false
	}
	l.store(TextDelta{Step: l.textStep, Text: l.pending.String()})
	l.pending.Reset()
	l.lastText = l.now()
	return true
}

// store encodes d as the next event; l.mu is held.
func (l *EventLog) store(d EventData) {
	l.next++
	l.events = append(l.events, StoredEvent{ID: l.next, Type: d.EventType(), Data: EncodeEvent(l.next, d, l.now())})
}

// EncodeEvent is the data of event id: one JSON object with its type,
// id and time, then the payload's fields.
func EncodeEvent(id int64, d EventData, at time.Time) string {
	payload, err := json.Marshal(d)
	if err != nil {
		// Every payload is plain fields; this cannot happen, and an event
		// is never worth failing a turn.
		payload = []byte("{}")
	}
	var b strings.Builder
	b.Grow(len(payload) + 80)
	b.WriteString(`{"type":`)
	b.WriteString(strconv.Quote(string(d.EventType())))
	b.WriteString(`,"id":`)
	b.WriteString(strconv.FormatInt(id, 10))
	b.WriteString(`,"at":"`)
	b.WriteString(at.UTC().Format(time.RFC3339Nano))
	b.WriteString(`"`)
	if len(payload) > 2 {
		b.WriteByte(',')
		b.Write(payload[1:])
	} else {
		b.WriteByte('}')
	}
	return b.String()
}
