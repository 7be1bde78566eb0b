package httpwire_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/httpwire"
)

func serve(t *testing.T, h http.HandlerFunc) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv
}

func asError(t *testing.T, err error) *httpwire.Error {
	t.Helper()
	e, ok := errors.AsType[*httpwire.Error](err)
	if !ok {
		t.Fatalf("err = %v (%T), want an *httpwire.Error", err, err)
	}
	return e
}

func TestDoSendsAndDecodes(t *testing.T) {
	var got *http.Request
	var body map[string]string
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		got = r
		_ = json.NewDecoder(r.Body).Decode(&body)
		w.Header().Set("X-Next", "n1")
		_, _ = io.WriteString(w, `{"answer":42}`)
	})
	var out struct{ Answer int }
	hdr, err := httpwire.Do(context.Background(), srv.Client(), httpwire.Request{
		Method: http.MethodPost, URL: srv.URL + "/x?q=1", Bearer: "tok",
		Header: http.Header{"X-Api-Version": {"v9"}}, Body: map[string]string{"a": "b"}, Out: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	if out.Answer != 42 || hdr.Get("X-Next") != "n1" {
		t.Errorf("answer %+v, header %v", out, hdr)
	}
	if got.Header.Get("Authorization") != "Bearer tok" || got.Header.Get("Accept") != "application/json" ||
		got.Header.Get("Content-Type") != "application/json" || got.Header.Get("X-Api-Version") != "v9" || body["a"] != "b" {
		t.Errorf("request: headers %v, body %v", got.Header, body)
	}

	// No body, no bearer, a caller's Accept, a custom decoder.
	var raw string
	_, err = httpwire.Do(context.Background(), srv.Client(), httpwire.Request{
		Method: http.MethodGet, URL: srv.URL, Header: http.Header{"Accept": {"application/vnd.x+json"}},
		Decode: func(r io.Reader) error { b, err := io.ReadAll(r); raw = string(b); return err },
	})
	if err != nil || raw != `{"answer":42}` {
		t.Fatalf("decode: %q %v", raw, err)
	}
	if got.Header.Get("Authorization") != "" || got.Header.Get("Content-Type") != "" || got.Header.Get("Accept") != "application/vnd.x+json" {
		t.Errorf("GET headers: %v", got.Header)
	}
}

func TestDoRefusedStatus(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"code":200,"message":"not what you asked for"}`)
	})
	req := httpwire.Request{Method: http.MethodGet, URL: srv.URL, OK: httpwire.Status(http.StatusCreated)}
	_, err := httpwire.Do(context.Background(), srv.Client(), req)
	e := asError(t, err)
	if e.Kind != httpwire.KindStatus || e.Status != 200 || e.Header.Get("X-RateLimit-Remaining") != "0" || e.Body != nil || e.Unwrap() != nil {
		t.Fatalf("error = %+v", e)
	}
	if err.Error() != "status: status 200" {
		t.Errorf("text without a message = %q", err.Error())
	}
	if said := e.WithMessage("fixed words"); said.Error() != "fixed words" || said.Status != 200 || e.Message != "" {
		t.Errorf("WithMessage: %q (status %d), original message %q", said.Error(), said.Status, e.Message)
	}

	req.ErrorBody = 8
	_, err = httpwire.Do(context.Background(), srv.Client(), req)
	if e := asError(t, err); string(e.Body) != `{"code":` {
		t.Errorf("error body = %q, want the first 8 bytes", e.Body)
	}
}

func TestDoTransportFailureKeepsTheCauseWithoutTheQuery(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	_, err := httpwire.Do(context.Background(), http.DefaultClient, httpwire.Request{Method: http.MethodGet, URL: url + "/search?q=private+words"})
	e := asError(t, err)
	if e.Kind != httpwire.KindTransport || e.Err == nil {
		t.Fatalf("error = %+v", e)
	}
	if d := e.Detail(); !strings.Contains(d, url+"/search") || strings.Contains(d, "private") {
		t.Errorf("detail = %q: want the host and path, not the query", d)
	}
	if !errors.Is(err, e.Err) {
		t.Error("an unworded error does not unwrap to its cause")
	}
	// Worded, it stands for its words: the cause is kept for the log only.
	said := e.WithMessage("backend unreachable")
	if said.Error() != "backend unreachable" || said.Err != e.Err || errors.Is(said, e.Err) || errors.Unwrap(said) != nil {
		t.Errorf("worded: %q, cause %v, still unwraps: %v", said.Error(), said.Err, errors.Is(said, e.Err))
	}
}

func TestDoContextComesFirst(t *testing.T) {
	release := make(chan struct{})
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, `{"partial":`)
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := httpwire.Do(ctx, srv.Client(), httpwire.Request{Method: http.MethodGet, URL: srv.URL})
	if e := asError(t, err); e.Kind != httpwire.KindContext || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the call: %+v", e)
	}

	// Cut mid-answer by the caller: the context, not a malformed answer.
	ctx, cancel = context.WithCancel(context.Background())
	var out any
	_, err = httpwire.Do(ctx, srv.Client(), httpwire.Request{Method: http.MethodGet, URL: srv.URL,
		Decode: func(r io.Reader) error {
			buf := make([]byte, 11)
			if _, err := io.ReadFull(r, buf); err != nil {
				return err
			}
			cancel()
			return json.NewDecoder(io.MultiReader(bytes.NewReader(buf), r)).Decode(&out)
		}})
	if e := asError(t, err); e.Kind != httpwire.KindContext || e.Status != 200 || !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled mid-answer: %+v", e)
	}
}

func TestDoDecodeFailures(t *testing.T) {
	srv := serve(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"s":"`+strings.Repeat("x", 100)+`"}`)
	})
	var out struct{ S string }
	_, err := httpwire.Do(context.Background(), srv.Client(), httpwire.Request{Method: http.MethodGet, URL: srv.URL, Out: &out, MaxBytes: 50})
	if e := asError(t, err); e.Kind != httpwire.KindDecode || e.Status != 200 || e.Err == nil {
		t.Fatalf("over MaxBytes: %+v", e)
	}
	_, err = httpwire.Do(context.Background(), srv.Client(), httpwire.Request{Method: http.MethodGet, URL: srv.URL, Out: &[]int{}})
	if e := asError(t, err); e.Kind != httpwire.KindDecode {
		t.Fatalf("wrong shape: %+v", e)
	}
	_, err = httpwire.Do(context.Background(), srv.Client(), httpwire.Request{Method: http.MethodGet, URL: srv.URL, Body: func() {}})
	if e := asError(t, err); e.Kind != httpwire.KindRequest {
		t.Fatalf("unencodable body: %+v", e)
	}
}

func TestErrorLogValue(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	e := (&httpwire.Error{Kind: httpwire.KindStatus, Status: 503, Err: errors.New("upstream busy")}).WithMessage("provider unavailable (status 503)")
	log.Warn("tool call failed", "err", e)
	var line struct {
		Err map[string]any `json:"err"`
	}
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
		t.Fatal(err)
	}
	if line.Err["kind"] != "status" || line.Err["status"] != 503.0 || line.Err["cause"] != "upstream busy" || line.Err["msg"] != "provider unavailable (status 503)" {
		t.Errorf("logged %s", buf.String())
	}
}
