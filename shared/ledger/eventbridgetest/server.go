// Package eventbridgetest is an EventBridge stand-in on loopback for
// tests and the local stack: it serves PutEvents as the public API
// defines it (AWS JSON 1.1, X-Amz-Target AWSEvents.PutEvents), so the
// real SDK client reaches it through its endpoint setting. It keeps the
// events it accepts, can write them as JSON lines, and can refuse calls
// or entries the ways EventBridge does.
package eventbridgetest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
)

// The account and region of the events' envelopes.
const (
	Account = "000000000000"
	Region  = "us-east-1"
)

// Event is an accepted event in the envelope EventBridge delivers to a
// rule's targets.
type Event struct {
	Version    string          `json:"version"`
	ID         string          `json:"id"`
	DetailType string          `json:"detail-type"`
	Source     string          `json:"source"`
	Account    string          `json:"account"`
	Time       time.Time       `json:"time"`
	Region     string          `json:"region"`
	Resources  []string        `json:"resources"`
	Detail     json.RawMessage `json:"detail"`
	// Bus is the bus the entry named (not part of the delivered envelope).
	Bus string `json:"-"`
}

// Server is a running stand-in.
type Server struct {
	URL string
	srv *http.Server

	mu           sync.Mutex
	events       []Event
	out          io.Writer
	failRequests int
	failEntries  int
	requests     int
}

// Start serves on a free loopback port. Accepted events are also written
// to out as JSON lines when out is not nil.
func Start(out io.Writer) (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("eventbridge stand-in: %w", err)
	}
	s := &Server{URL: "http://" + ln.Addr().String(), out: out}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Close stops the server.
func (s *Server) Close() error { return s.srv.Close() }

// Client is a real SDK client for the server, with dummy credentials
// (the stand-in checks no signature) and the SDK's standard retries.
func (s *Server) Client() *eventbridge.Client {
	return eventbridge.NewFromConfig(aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("local", "local", ""),
	}, func(o *eventbridge.Options) { o.BaseEndpoint = aws.String(s.URL) })
}

// FailRequests makes the next n requests fail with 500 InternalException,
// which the SDK retries (three attempts by default) before giving up.
func (s *Server) FailRequests(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failRequests = n
}

// FailEntries makes the next n entries fail inside successful calls
// (FailedEntryCount > 0, ErrorCode InternalFailure), which the SDK does
// not retry.
func (s *Server) FailEntries(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failEntries = n
}

// Events returns the accepted events in order.
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

type putEventsInput struct {
	Entries []struct {
		Source       string
		DetailType   string
		Detail       string
		EventBusName string
		Resources    []string
		Time         *float64
	}
}

type resultEntry struct {
	EventID      string `json:"EventId,omitempty"`
	ErrorCode    string `json:"ErrorCode,omitempty"`
	ErrorMessage string `json:"ErrorMessage,omitempty"`
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSEvents.PutEvents" {
		writeError(w, http.StatusBadRequest, "UnknownOperationException", "only AWSEvents.PutEvents is served")
		return
	}
	var in putEventsInput
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&in); err != nil {
		writeError(w, http.StatusBadRequest, "SerializationException", "body is not JSON")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests++
	if s.failRequests > 0 {
		s.failRequests--
		writeError(w, http.StatusInternalServerError, "InternalException", "injected failure")
		return
	}
	if n := len(in.Entries); n < 1 || n > 10 {
		writeError(w, http.StatusBadRequest, "ValidationException", fmt.Sprintf("%d entries: between 1 and 10 are allowed", n))
		return
	}
	out := struct {
		FailedEntryCount int
		Entries          []resultEntry
	}{Entries: make([]resultEntry, len(in.Entries))}
	for i, e := range in.Entries {
		switch {
		case e.Source == "" || e.DetailType == "" || e.Detail == "":
			out.Entries[i] = resultEntry{ErrorCode: "MalformedDetail", ErrorMessage: "Source, DetailType and Detail are required"}
		case !json.Valid([]byte(e.Detail)) || e.Detail[0] != '{':
			out.Entries[i] = resultEntry{ErrorCode: "MalformedDetail", ErrorMessage: "Detail is not a JSON object"}
		case s.failEntries > 0:
			s.failEntries--
			out.Entries[i] = resultEntry{ErrorCode: "InternalFailure", ErrorMessage: "injected failure"}
		default:
			ev := Event{Version: "0", ID: newID(), DetailType: e.DetailType, Source: e.Source, Account: Account,
				Time: entryTime(e.Time), Region: Region, Resources: e.Resources, Detail: json.RawMessage(e.Detail), Bus: e.EventBusName}
			if ev.Resources == nil {
				ev.Resources = []string{}
			}
			s.events = append(s.events, ev)
			if s.out != nil {
				line, _ := json.Marshal(ev)
				_, _ = s.out.Write(append(line, '\n'))
			}
			out.Entries[i] = resultEntry{EventID: ev.ID}
			continue
		}
		out.FailedEntryCount++
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	_ = json.NewEncoder(w).Encode(out)
}

// entryTime is the entry's Time (epoch seconds), or now when absent.
func entryTime(sec *float64) time.Time {
	if sec == nil {
		return time.Now().UTC().Truncate(time.Second)
	}
	whole, frac := math.Modf(*sec)
	return time.Unix(int64(whole), int64(frac*1e9)).UTC().Truncate(time.Second)
}

func writeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"__type": typ, "message": msg})
}

func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
