// Package eventbus is a local stand-in for Amazon EventBridge's PutEvents:
// the JSON 1.1 API (X-Amz-Target AWSEvents.PutEvents) on loopback, which
// the real SDK client reaches through AWS_ENDPOINT_URL_EVENTBRIDGE. Each
// accepted entry is appended, as the event EventBridge would deliver to a
// rule's target, to a JSON-lines file, and kept for the caller to read.
// For the local stack and tests only.
package eventbus

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"
)

// EndpointVar is the SDK's standard variable for EventBridge's endpoint.
const EndpointVar = "AWS_ENDPOINT_URL_EVENTBRIDGE"

// Limits of PutEvents (EventBridge API reference).
const (
	maxEntries    = 10
	maxEntryBytes = 256 * 1024
)

// Entry is one PutEventsRequestEntry as sent.
type Entry struct {
	Source       string   `json:"Source"`
	DetailType   string   `json:"DetailType"`
	Detail       string   `json:"Detail"`
	EventBusName string   `json:"EventBusName,omitempty"`
	Resources    []string `json:"Resources,omitempty"`
	Time         *float64 `json:"Time,omitempty"` // epoch seconds
	TraceHeader  string   `json:"TraceHeader,omitempty"`
}

// Event is an accepted entry as EventBridge delivers it to a target.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       string          `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
	// Bus is the bus it was put on ("default" when the entry named none);
	// not part of the delivered event, so not written to the file.
	Bus string `json:"-"`
}

// Config configures the stand-in. The zero value is usable.
type Config struct {
	// EventsFile, when set, receives one JSON line per accepted event.
	EventsFile string
	// Account and Region fill the events (default 123456789012, us-east-1).
	Account, Region string
	// Fail, when set, decides entries that fail with InternalFailure, as
	// EventBridge reports a failed entry (FailedEntryCount, ErrorCode):
	// for tests of a caller's retry.
	Fail func(Entry) bool
	// Now stamps events without a Time (default time.Now).
	Now func() time.Time
}

// Server is a running stand-in.
type Server struct {
	URL string

	cfg    Config
	srv    *http.Server
	done   chan error
	mu     sync.Mutex
	events []Event
	file   *os.File
}

// Start listens on addr ("127.0.0.1:0" for any free port) and serves.
func Start(addr string, cfg Config) (*Server, error) {
	if cfg.Account == "" {
		cfg.Account = "123456789012"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, done: make(chan error, 1)}
	if cfg.EventsFile != "" {
		f, err := os.OpenFile(cfg.EventsFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("eventbus: %w", err)
		}
		s.file = f
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		if s.file != nil {
			_ = s.file.Close()
		}
		return nil, fmt.Errorf("eventbus: listen %s: %w", addr, err)
	}
	s.URL = "http://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { s.done <- s.srv.Serve(ln) }()
	return s, nil
}

// Events returns the events accepted so far, in order.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Close stops the server and closes the file.
func (s *Server) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	if serr := <-s.done; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	if s.file != nil {
		err = errors.Join(err, s.file.Close())
	}
	return err
}

type resultEntry struct {
	EventID      string `json:"EventId,omitempty"`
	ErrorCode    string `json:"ErrorCode,omitempty"`
	ErrorMessage string `json:"ErrorMessage,omitempty"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/x-amz-json-1.1" {
		apiError(w, http.StatusBadRequest, "SerializationException", "expected a POST of application/x-amz-json-1.1")
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "AWSEvents.PutEvents" {
		apiError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("%s is not served by the local event bus", target))
		return
	}
	var in struct {
		Entries []json.RawMessage `json:"Entries"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 2*maxEntries*maxEntryBytes))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "SerializationException", "the body is not a PutEvents request")
		return
	}
	if len(in.Entries) < 1 || len(in.Entries) > maxEntries {
		apiError(w, http.StatusBadRequest, "ValidationException",
			fmt.Sprintf("1 validation error detected: Value at 'entries' failed to satisfy constraint: Member must have length between 1 and %d", maxEntries))
		return
	}
	out := struct {
		Entries          []resultEntry `json:"Entries"`
		FailedEntryCount int           `json:"FailedEntryCount"`
	}{Entries: make([]resultEntry, len(in.Entries))}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, raw := range in.Entries {
		res, ev := s.accept(raw)
		if res.ErrorCode != "" {
			out.FailedEntryCount++
			out.Entries[i] = res
			continue
		}
		if err := s.record(ev); err != nil {
			out.FailedEntryCount++
			out.Entries[i] = resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "the local events file could not be written"}
			continue
		}
		out.Entries[i] = res
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// accept validates one entry as EventBridge does and builds its event.
func (s *Server) accept(raw json.RawMessage) (resultEntry, Event) {
	var e Entry
	if err := json.Unmarshal(raw, &e); err != nil {
		return resultEntry{ErrorCode: "MalformedDetail", ErrorMessage: "the entry is not a PutEventsRequestEntry"}, Event{}
	}
	switch {
	case len(raw) > maxEntryBytes:
		return resultEntry{ErrorCode: "InvalidArgument", ErrorMessage: "Event size exceeds 256 KB"}, Event{}
	case e.Source == "":
		return resultEntry{ErrorCode: "InvalidArgument", ErrorMessage: "Parameter Source is not valid. Reason: Source is a required argument."}, Event{}
	case e.DetailType == "":
		return resultEntry{ErrorCode: "InvalidArgument", ErrorMessage: "Parameter DetailType is not valid. Reason: DetailType is a required argument."}, Event{}
	case e.Detail == "":
		return resultEntry{ErrorCode: "InvalidArgument", ErrorMessage: "Parameter Detail is not valid. Reason: Detail is a required argument."}, Event{}
	}
	var detail map[string]json.RawMessage
	if err := json.Unmarshal([]byte(e.Detail), &detail); err != nil {
		return resultEntry{ErrorCode: "MalformedDetail", ErrorMessage: "Detail is malformed."}, Event{}
	}
	if s.cfg.Fail != nil && s.cfg.Fail(e) {
		return resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "Internal service error (injected by the local event bus)."}, Event{}
	}
	at := s.cfg.Now()
	if e.Time != nil {
		sec := int64(*e.Time)
		at = time.Unix(sec, int64((*e.Time-float64(sec))*1e9))
	}
	bus := e.EventBusName
	if bus == "" {
		bus = "default"
	}
	resources := e.Resources
	if resources == nil {
		resources = []string{}
	}
	id := eventID()
	return resultEntry{EventID: id}, Event{
		Version: "0", ID: id, DetailType: e.DetailType, Source: e.Source,
		Account: s.cfg.Account, Region: s.cfg.Region, Time: at.UTC().Format(time.RFC3339),
		Resources: resources, Detail: json.RawMessage(e.Detail), Bus: bus,
	}
}

// record keeps an event and appends it to the file. Called with mu held.
func (s *Server) record(ev Event) error {
	if s.file != nil {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if _, err := s.file.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	s.events = append(s.events, ev)
	return nil
}

// eventID is a random UUID (version 4), as EventBridge's event ids are.
func eventID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
