package httpwire

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
)

// DefaultMaxBytes bounds what Do reads of an answer unless told otherwise.
const DefaultMaxBytes = 1 << 20

// drainBytes is how much of an answer that is not decoded Do reads and
// drops, so that a short body does not cost the connection.
const drainBytes = 4 << 10

// Request is one outbound call with a JSON body (or none) and a JSON
// answer (or none).
type Request struct {
	Method string
	URL    string
	// Bearer, when set, is sent as "Authorization: Bearer <Bearer>".
	Bearer string
	// Header holds other headers (an API key, an API version). Accept is
	// application/json unless set here.
	Header http.Header
	// Body, when not nil, is sent JSON-encoded as application/json.
	Body any
	// OK reports the statuses that are an answer; nil accepts any 2xx.
	OK func(status int) bool
	// Out, when not nil, receives an accepted answer's JSON body; Decode,
	// when set, reads the body instead. With neither the body is dropped.
	Out    any
	Decode func(body io.Reader) error
	// MaxBytes bounds what is read of an accepted answer; zero means
	// DefaultMaxBytes.
	MaxBytes int64
	// ErrorBody is how much of a refused answer's body is kept on the
	// Error, for APIs whose error bodies carry a code; zero keeps none.
	ErrorBody int64
}

// Status accepts exactly want.
func Status(want int) func(int) bool { return func(s int) bool { return s == want } }

// Is2xx accepts any 2xx status.
func Is2xx(s int) bool { return s >= 200 && s <= 299 }

// Kind says where a call failed.
type Kind int

const (
	// KindRequest: the request could not be built or encoded (our bug).
	KindRequest Kind = iota + 1
	// KindContext: the caller's context ended first; the cause is ctx.Err().
	KindContext
	// KindTransport: no answer (refused, reset, DNS, a client timeout).
	KindTransport
	// KindStatus: an answer with a status OK does not accept.
	KindStatus
	// KindDecode: an accepted answer that could not be read.
	KindDecode
)

func (k Kind) String() string {
	switch k {
	case KindRequest:
		return "request"
	case KindContext:
		return "context"
	case KindTransport:
		return "transport"
	case KindStatus:
		return "status"
	case KindDecode:
		return "decode"
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Error is a failed call. Kind, Status and the cause are for the log,
// which gets them through LogValue. Until the caller words it
// (WithMessage), Unwrap gives the cause to errors.Is and errors.As; once
// worded, it stands for the caller's fixed, client-safe words alone, as a
// fixed error would (a client timeout worded "unreachable" is not then
// taken for the turn's deadline), and the cause is the log's only. The
// cause of a transport failure names the method, host and path, never the
// query or a header.
type Error struct {
	Kind   Kind
	Status int         // the answer's status (KindStatus, KindDecode)
	Header http.Header // the answer's header (KindStatus)
	Body   []byte      // the start of a refused answer (Request.ErrorBody)
	Err    error       // the cause
	// Message is what the caller shows in place of the detail.
	Message string
}

// WithMessage returns a copy of e whose text is msg.
func (e *Error) WithMessage(msg string) *Error {
	cp := *e
	cp.Message = msg
	return &cp
}

func (e *Error) Error() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Detail()
}

// Detail describes the failure for the log: where it failed, the status
// and the cause.
func (e *Error) Detail() string {
	s := e.Kind.String()
	if e.Status != 0 {
		s += fmt.Sprintf(": status %d", e.Status)
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap gives the cause, unless the caller has worded the error.
func (e *Error) Unwrap() error {
	if e.Message != "" {
		return nil
	}
	return e.Err
}

// LogValue puts the detail beside the message in structured logs.
func (e *Error) LogValue() slog.Value {
	attrs := []slog.Attr{slog.String("kind", e.Kind.String())}
	if e.Message != "" {
		attrs = append(attrs, slog.String("msg", e.Message))
	}
	if e.Status != 0 {
		attrs = append(attrs, slog.Int("status", e.Status))
	}
	if e.Err != nil {
		attrs = append(attrs, slog.String("cause", e.Err.Error()))
	}
	return slog.GroupValue(attrs...)
}

// NewRequest builds a request with r's method, URL and JSON body (none
// when body is nil), for callers that read the answer themselves (a
// stream).
func NewRequest(ctx context.Context, method, target string, body any) (*http.Request, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("encoding request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// Do makes the call with hc and returns the answer's header. Every
// failure is an *Error: the caller's context first (ctx.Err() as cause,
// also when it cut the answer short), then the transport, then a refused
// status, then an unreadable answer.
func Do(ctx context.Context, hc *http.Client, r Request) (http.Header, error) {
	req, err := NewRequest(ctx, r.Method, r.URL, r.Body)
	if err != nil {
		return nil, &Error{Kind: KindRequest, Err: err}
	}
	for k, v := range r.Header {
		req.Header[k] = v
	}
	if req.Header.Get("Accept") == "" {
		req.Header.Set("Accept", "application/json")
	}
	if r.Bearer != "" {
		req.Header.Set("Authorization", "Bearer "+r.Bearer)
	}
	resp, err := hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, &Error{Kind: KindContext, Err: ctx.Err()}
		}
		return nil, &Error{Kind: KindTransport, Err: transportCause(err)}
	}
	defer resp.Body.Close()
	ok := r.OK
	if ok == nil {
		ok = Is2xx
	}
	if !ok(resp.StatusCode) {
		e := &Error{Kind: KindStatus, Status: resp.StatusCode, Header: resp.Header}
		if r.ErrorBody > 0 {
			e.Body, _ = io.ReadAll(io.LimitReader(resp.Body, r.ErrorBody))
		}
		drain(resp.Body)
		return resp.Header, e
	}
	max := r.MaxBytes
	if max <= 0 {
		max = DefaultMaxBytes
	}
	body := io.LimitReader(resp.Body, max)
	switch {
	case r.Decode != nil:
		err = r.Decode(body)
	case r.Out != nil:
		err = json.NewDecoder(body).Decode(r.Out)
	default:
		drain(resp.Body)
	}
	if err != nil {
		if ctx.Err() != nil {
			return resp.Header, &Error{Kind: KindContext, Status: resp.StatusCode, Err: ctx.Err()}
		}
		return resp.Header, &Error{Kind: KindDecode, Status: resp.StatusCode, Err: err}
	}
	return resp.Header, nil
}

func drain(body io.Reader) { _, _ = io.Copy(io.Discard, io.LimitReader(body, drainBytes)) }

// transportCause is a transport error without the request's query, which
// can hold what the model searched for.
func transportCause(err error) error {
	ue, ok := err.(*url.Error)
	if !ok {
		return err
	}
	target := ue.URL
	if u, perr := url.Parse(ue.URL); perr == nil {
		u.RawQuery, u.Fragment, u.User = "", "", nil
		target = u.String()
	}
	return fmt.Errorf("%s %s: %w", ue.Op, target, ue.Err)
}
