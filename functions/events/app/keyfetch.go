package app

import (
	"bytes"
	"io"
	"net/http"
	"sync"
	"time"
)

// KeyRefetchInterval bounds how often the issuer's documents (its OIDC
// discovery and its JWKS) are fetched again. go-oidc fetches the key set
// anew whenever a signature fails to verify, which a flood of forged
// tokens would turn into a fetch per request (slow, and the issuer's
// limits ours); within this interval the last answer is reused, so a
// forged token costs one signature check. A key the issuer adds is used
// at most this long after its first token (API Gateway caches keys up to
// two hours).
const KeyRefetchInterval = time.Minute

// refetchLimit is an http.RoundTripper that answers a GET again from the
// last 200 it got for the URL while that is younger than every.
type refetchLimit struct {
	next  http.RoundTripper
	every time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]fetched
}

type fetched struct {
	at     time.Time
	header http.Header
	body   []byte
}

func newRefetchLimit(next http.RoundTripper, every time.Duration) *refetchLimit {
	return &refetchLimit{next: next, every: every, now: time.Now, last: map[string]fetched{}}
}

func (l *refetchLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return l.next.RoundTrip(req)
	}
	url := req.URL.String()
	l.mu.Lock()
	f, ok := l.last[url]
	l.mu.Unlock()
	if ok && l.now().Sub(f.at) < l.every {
		return &http.Response{Status: "200 OK", StatusCode: http.StatusOK, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: f.header.Clone(), Body: io.NopCloser(bytes.NewReader(f.body)), ContentLength: int64(len(f.body)), Request: req}, nil
	}
	resp, err := l.next.RoundTrip(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.last[url] = fetched{at: l.now(), header: resp.Header.Clone(), body: body}
	l.mu.Unlock()
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}
