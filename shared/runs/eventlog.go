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
	// TextInterval coalesces answer text and a code run's output: at most
	// one text.delta (tool.output) this often while the model writes (the
	// code prints), and the rest before any other event.
	TextInterval = 250 * time.Millisecond
	// MaxEventText bounds the text.delta text a run stores; past it the
	// deltas stop (run.finished still carries the final message).
	MaxEventText = 64 << 10
	// MaxEventToolOutput bounds the tool.output text a run stores; past
	// it the deltas stop (tool.finished still carries what the model was
	// told).
	MaxEventToolOutput = 64 << 10
	// MaxEventOutput bounds a tool.finished output, as the run bounds an
	// error message.
	MaxEventOutput = MaxErrorMessage
)

// delta is an event whose text is joined to the next one's while they
// come close together: text.delta and tool.output.
type delta interface {
	EventData
	// key is equal for deltas that join: one step's text, one call's
	// stream.
	key() string
	text() string
	withText(string) EventData
}

func (t TextDelta) key() string                 { return "text\x00" + strconv.Itoa(t.Step) }
func (t TextDelta) text() string                { return t.Text }
func (t TextDelta) withText(s string) EventData { t.Text = s; return t }
func (o ToolOutput) key() string                { return "output\x00" + o.CallID + "\x00" + o.Stream }
func (o ToolOutput) text() string               { return o.Text }
func (o ToolOutput) withText(s string) EventData {
	o.Text = s
	return o
}

// EventLog numbers a run's events, coalesces its text and keeps them for
// the run's writes. Its methods are safe for concurrent use: the turn
// records (a code run's output from the provider's reader), a flusher
// snapshots.
type EventLog struct {
	mu     sync.Mutex
	now    func() time.Time
	events []StoredEvent
	next   int64
	// lastAt is the latest event's time: no event is stamped before it,
	// whatever the clock (another worker's, after a resume).
	lastAt time.Time
	// pending is the text of held deltas not yet an event, joined to
	// held (the first of them, whose other fields the event takes).
	pending strings.Builder
	held    delta
	// lastFlush is when each kind of delta last became an event; budget
	// what each may still store.
	lastFlush map[EventType]time.Time
	budget    map[EventType]int
	// onRecord is told after each stored event (the flusher's kick).
	onRecord func()
}

// NewEventLog starts a run's log after the events it already has (a run
// read back from the store), numbering from the next id. now nil is
// time.Now; onRecord, optional, is called after each event is stored,
// and when a code run's output is held, outside the log's lock.
func NewEventLog(have []StoredEvent, now func() time.Time, onRecord func()) *EventLog {
	if now == nil {
		now = time.Now
	}
	l := &EventLog{now: now, events: slices.Clone(have), onRecord: onRecord,
		lastFlush: map[EventType]time.Time{},
		budget:    map[EventType]int{EventTextDelta: MaxEventText, EventToolOutput: MaxEventToolOutput}}
	for _, e := range have {
		l.next = max(l.next, e.ID)
		if e.Type == EventTextDelta || e.Type == EventToolOutput {
			l.budget[e.Type] -= len(e.Data) // at least its text: the rest is little
		}
	}
	if n := len(have); n > 0 {
		l.lastAt = eventTime(have[n-1].Data)
	}
	return l
}

// eventTime is the "at" of an event's data; zero when it has none.
func eventTime(data string) time.Time {
	var head struct {
		At time.Time `json:"at"`
	}
	_ = json.Unmarshal([]byte(data), &head)
	return head.At
}

// Record stores d as the run's next event. A TextDelta or ToolOutput is
// held and coalesced with the next of its kind (the same step's text,
// the same call's stream): it becomes an event once TextInterval has
// passed since that kind's last, or before any other event. A held
// ToolOutput kicks the flusher, so that a code run silent for a while
// still shows what it printed within the flush delay; held text does
// not (the model's stream ends within seconds, and a kick per held text
// would double a streaming answer's writes).
func (l *EventLog) Record(d EventData) {
	if l == nil || d == nil {
		return
	}
	l.mu.Lock()
	stored, kick := false, false
	if dd, ok := d.(delta); ok {
		if l.held != nil && l.held.key() != dd.key() {
			stored = l.flushHeld()
		}
		typ := dd.EventType()
		if room := l.budget[typ]; room > 0 {
			if text := textcap.Bytes(dd.text(), room); text != "" {
				if l.held == nil {
					l.held = dd
				}
				l.pending.WriteString(text)
				l.budget[typ] -= len(text)
			}
		}
		if l.held != nil && l.now().Sub(l.lastFlush[typ]) >= TextInterval {
			stored = l.flushHeld() || stored
		}
		kick = l.held != nil && typ == EventToolOutput
	} else {
		l.flushHeld()
		l.store(d)
		stored = true
	}
	l.mu.Unlock()
	if (stored || kick) && l.onRecord != nil {
		l.onRecord()
	}
}

// Snapshot is every event so far, held text included, for a write.
func (l *EventLog) Snapshot() []StoredEvent {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushHeld()
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

// flushHeld turns the held text into an event; l.mu is held.
func (l *EventLog) flushHeld() bool {
	if l.held == nil {
		return false
	}
	l.store(l.held.withText(l.pending.String()))
	l.lastFlush[l.held.EventType()] = l.now()
	l.pending.Reset()
	l.held = nil
	return true
}

// store encodes d as the next event, stamped no earlier than the one
// before it; l.mu is held.
func (l *EventLog) store(d EventData) {
	l.next++
	at := l.now()
	if at.Before(l.lastAt) {
		at = l.lastAt
	}
	l.lastAt = at
	l.events = append(l.events, StoredEvent{ID: l.next, Type: d.EventType(), Data: EncodeEvent(l.next, d, at)})
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
