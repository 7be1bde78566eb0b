package load

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
)

// client calls the API as the typed client does (api/client-example):
// every turn with an Idempotency-Key and Prefer: wait, retried with the
// same key after a timeout or a 503.
type client struct {
	base    string
	http    *http.Client
	secret  []byte
	admin   string
	timeout time.Duration
}

func newClient(base string, secret []byte, timeout time.Duration, conns int) (*client, error) {
	admin, err := apigatewaylocal.MintServiceToken(secret, apigatewaylocal.ServiceSubject, time.Now())
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: conns, IdleConnTimeout: time.Minute, DisableCompression: true}
	return &client{base: base, http: &http.Client{Transport: tr}, secret: secret, admin: admin, timeout: timeout}, nil
}

func (c *client) userToken(user string) (string, error) {
	return apigatewaylocal.MintToken(c.secret, user, nil, 24*time.Hour, time.Now())
}

// answer is one request's outcome: its status (0 when no answer came),
// problem type, run id and whether it was a replay.
type answer struct {
	status     int
	problem    string
	runID      string
	runStatus  string
	replayed   bool
	retryAfter time.Duration
	err        error
}

func (c *client) do(ctx context.Context, method, path, token string, headers map[string]string, body any) answer {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, bytes.NewReader(b))
	if err != nil {
		return answer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	res, err := c.http.Do(req)
	if err != nil {
		return answer{err: err}
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, err: err, replayed: res.Header.Get("Idempotent-Replayed") == "true"}
	if s, perr := strconv.Atoi(res.Header.Get("Retry-After")); perr == nil {
		a.retryAfter = time.Duration(s) * time.Second
	}
	var parsed struct {
		Type   string `json:"type"`
		RunID  string `json:"runId"`
		Status any    `json:"status"`
	}
	_ = json.Unmarshal(raw, &parsed)
	a.problem, a.runID = parsed.Type, parsed.RunID
	if s, ok := parsed.Status.(string); ok {
		a.runStatus = s
	}
	return a
}

// admin calls a service route and requires 200 or 201.
func (c *client) adminCall(ctx context.Context, method, path string, body any) error {
	a := c.do(ctx, method, path, c.admin, nil, body)
	if a.err != nil {
		return a.err
	}
	if a.status != http.StatusOK && a.status != http.StatusCreated {
		return fmt.Errorf("%s %s: %d %s", method, path, a.status, a.problem)
	}
	return nil
}

// Retries of one turn's request (the typed client makes 3 attempts; a
// load client whose request timed out or was cut keeps asking with the
// same key until it learns the run, so that every run is accounted for).
const maxAttempts = 5

// attempt is what the driver records of each request of a turn.
type attempt struct {
	answer
	latency time.Duration
}

// turn posts one turn, retrying as the typed client does. disconnect,
// when positive, cuts the first request after that long, as a client
// that goes away mid-turn.
func (c *client) turn(ctx context.Context, token, install, key, message string, disconnect time.Duration) []attempt {
	var out []attempt
	for i := range maxAttempts {
		timeout := c.timeout
		if i == 0 && disconnect > 0 {
			timeout = disconnect
		}
		rctx, cancel := context.WithTimeout(ctx, timeout)
		start := time.Now()
		a := c.do(rctx, http.MethodPost, "/v1/installs/"+install+"/turns", token,
			map[string]string{"Idempotency-Key": key, "Prefer": "wait=" + strconv.Itoa(int(c.timeout/time.Second)/2)},
			map[string]string{"message": message, "trigger": "load"})
		cancel()
		out = append(out, attempt{answer: a, latency: time.Since(start)})
		switch {
		case ctx.Err() != nil:
			return out
		case a.err != nil && (errors.Is(a.err, context.DeadlineExceeded) || errors.Is(a.err, context.Canceled) || isNetErr(a.err)):
			// Timed out or cut: nothing tells whether it was admitted; the
			// same key makes asking again safe.
		case a.status == http.StatusServiceUnavailable:
			wait := a.retryAfter
			if wait <= 0 || wait > time.Second {
				wait = time.Second // a load client does not wait as long as a user
			}
			time.Sleep(wait)
		default:
			return out
		}
	}
	return out
}

func isNetErr(err error) bool {
	var ue interface{ Timeout() bool }
	return errors.As(err, &ue) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF)
}
