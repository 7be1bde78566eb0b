// Package eventbridgelocal is the local stand-in for Amazon EventBridge's
// PutEvents: the JSON 1.1 API (X-Amz-Target AWSEvents.PutEvents) on
// loopback, which the real SDK client reaches through its endpoint
// (AWS_ENDPOINT_URL_EVENTBRIDGE, or Client). Each accepted entry becomes
// the event EventBridge would deliver to a rule's target: kept for the
// caller to read (Events), and appended as a JSON line to a file and a
// writer when configured. It can refuse calls (500, which the SDK
// retries) and entries (FailedEntryCount, which it does not), as
// EventBridge does. The local stack, `make invoke` and the tests use it.
package eventbridgelocal

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/internal/loopback"
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

// Event is an accepted entry in the envelope EventBridge delivers to a
// rule's targets.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"` // UTC, whole seconds, as delivered
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
	// Bus is the bus it was put on ("default" when the entry named none);
	// not part of the delivered event, so not written to the lines.
	Bus string `json:"-"`
}

// Config configures the stand-in. The zero value is usable.
type Config struct {
	// Addr is where to listen; "" is "127.0.0.1:0", any free port.
	Addr string
	// EventsFile, when set, is appended one JSON line per accepted event.
	EventsFile string
	// Out, when set, is written the same lines (the local stack prints them).
	Out io.Writer
	// Account and Region fill the events (default 123456789012, us-east-1).
	Account, Region string
	// Fail, when set, decides entries that fail with InternalFailure, as
	// EventBridge reports a failed entry (FailedEntryCount, ErrorCode):
	// for tests of a caller's retry. FailEntries fails the next n instead.
	Fail func(Entry) bool
	// Now stamps events without a Time (default time.Now).
	Now func() time.Time
	// Calls, when set, records every request served (awscalls.Handler).
	Calls *awscalls.Recorder
}

// Server is a running stand-in.
type Server struct {
	URL string

	cfg  Config
	http *loopback.Server

	mu           sync.Mutex
	events       []Event
	file         *os.File
	requests     int
	failRequests int
	failEntries  int
}

// Start listens on cfg.Addr and serves until Close.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Account == "" {
		cfg.Account = "123456789012"
	}
	if cfg.Region == "" {
		cfg.Region = "us-east-1"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg}
	if cfg.EventsFile != "" {
		f, err := os.OpenFile(cfg.EventsFile, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
		if err != nil {
			return nil, fmt.Errorf("eventbridge stand-in: %w", err)
		}
		s.file = f
	}
	srv, err := loopback.Serve(cfg.Addr, awscalls.Handler("events", cfg.Calls, s))
	if err != nil {
		if s.file != nil {
			_ = s.file.Close()
		}
		return nil, fmt.Errorf("eventbridge stand-in: %w", err)
	}
	s.http, s.URL = srv, srv.URL
	return s, nil
}

// Client is a real SDK client for the server, with dummy credentials
// (the stand-in checks no signature) and the SDK's standard retries.
func (s *Server) Client() *eventbridge.Client {
	return eventbridge.NewFromConfig(aws.Config{
		Region:      s.cfg.Region,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(s.URL) })
}

// Events returns the events accepted so far, in order.
func (s *Server) Events() []Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Event(nil), s.events...)
}

// Requests is the number of PutEvents requests received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// FailRequests makes the next n requests fail with 500 InternalException,
// which the SDK retries (three attempts by default) before giving up.
func (s *Server) FailRequests(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRequests = n
}

// FailEntries makes the next n valid entries fail inside successful calls
// (FailedEntryCount > 0, ErrorCode InternalFailure), which the SDK does
// not retry.
func (s *Server) FailEntries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failEntries = n
}

// Close stops the server and closes the file.
func (s *Server) Close() error {
	err := s.http.Close()
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
		apiError(w, http.StatusBadRequest, "UnknownOperationException", fmt.Sprintf("%s is not served by the local EventBridge", target))
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
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.failRequests > 0 {
		s.failRequests--
		apiError(w, http.StatusInternalServerError, "InternalException", "injected failure")
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
	for i, raw := range in.Entries {
		res, ev := s.accept(raw)
		if res.ErrorCode == "" {
			if err := s.record(ev); err != nil {
				res = resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "the local events file could not be written"}
			}
		}
		if res.ErrorCode != "" {
			out.FailedEntryCount++
		}
		out.Entries[i] = res
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// accept validates one entry as EventBridge does and builds its event.
// Called with mu held.
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
		return resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "Internal service error (injected by the local EventBridge)."}, Event{}
	}
	if s.failEntries > 0 {
		s.failEntries--
		return resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "Internal service error (injected by the local EventBridge)."}, Event{}
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
		Account: s.cfg.Account, Region: s.cfg.Region, Time: s.entryTime(e.Time),
		Resources: resources, Detail: json.RawMessage(e.Detail), Bus: bus,
	}
}

// entryTime is the entry's Time (epoch seconds), or now when absent, in
// UTC to the second as the delivered event's "time".
func (s *Server) entryTime(sec *float64) time.Time {
	at := s.cfg.Now()
	if sec != nil {
		whole, frac := math.Modf(*sec)
		at = time.Unix(int64(whole), int64(frac*1e9))
	}
	return at.UTC().Truncate(time.Second)
}

// record keeps an event and appends its line to the file and Out.
// Called with mu held.
func (s *Server) record(ev Event) error {
	if s.file != nil || s.cfg.Out != nil {
		line, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		line = append(line, '\n')
		if s.file != nil {
			if _, err := s.file.Write(line); err != nil {
				return err
			}
		}
		if s.cfg.Out != nil {
			if _, err := s.cfg.Out.Write(line); err != nil {
				return err
			}
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
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}
