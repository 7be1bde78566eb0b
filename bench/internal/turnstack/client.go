package turnstack

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/infra/awslocal/apigatewaylocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/runs"
)

// Client drives the turn API as the frontend does: one loopback HTTP/1.1
// keep-alive connection, a user token, a turn per request that waits for
// its end (Prefer: wait), each with its own Idempotency-Key.
type Client struct {
	Base  string
	HTTP  *http.Client
	user  string
	admin string
	seq   int
}

// NewClient mints the benchmark user's and the service's tokens.
func NewClient(base string) (*Client, error) {
	now := time.Now()
	user, err := apigatewaylocal.MintToken([]byte(Secret), UserID, nil, 24*time.Hour, now)
	if err != nil {
		return nil, err
	}
	admin, err := apigatewaylocal.MintServiceToken([]byte(Secret), apigatewaylocal.ServiceSubject, now)
	if err != nil {
		return nil, err
	}
	tr := &http.Transport{MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute, DisableCompression: true}
	return &Client{Base: base, HTTP: &http.Client{Transport: tr}, user: user, admin: admin}, nil
}

// CreateInstall creates the benchmark's install through the API: the
// native engine, offering only the no-op tool.
func (c *Client) CreateInstall(ctx context.Context) error {
	body := `{"userId":"` + UserID + `","podId":"bench-pod","agentName":"bench-agent","engine":"native","tools":["` + script.Tool + `"]}`
	status, b, err := c.do(ctx, http.MethodPut, "/v1/installs/"+InstallID, c.admin, nil, body)
	if err != nil {
		return err
	}
	if status != http.StatusCreated && status != http.StatusOK {
		return fmt.Errorf("create install: %d %s", status, b)
	}
	return nil
}

// TurnBody is the request body of every turn.
var TurnBody = func() string {
	b, _ := json.Marshal(map[string]string{"message": Message, "trigger": "bench"})
	return string(b)
}()

// Done identifies a finished turn's records.
type Done struct {
	RunID          string
	IdempotencyKey string
}

// NewIdempotencyKey is a key no earlier turn used.
func (c *Client) NewIdempotencyKey() string {
	c.seq++
	return "bench-" + strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(c.seq)
}

// Turn runs one turn through the API and checks it ran the script.
func (c *Client) Turn(ctx context.Context) (Done, error) {
	key, b, err := c.TurnRequest(ctx)
	if err != nil {
		return Done{}, err
	}
	runID, err := CheckRun(b)
	return Done{RunID: runID, IdempotencyKey: key}, err
}

// TurnRequest makes one turn's request through the API and returns its
// Idempotency-Key and the run's JSON, unchecked: a caller timing the turn
// alone checks the run (CheckRun) after it.
func (c *Client) TurnRequest(ctx context.Context) (key string, body []byte, err error) {
	return c.turnRequest(ctx, "turn")
}

// Floor makes one request of the floor's API (bench/internal/floor),
// shaped as a turn's, and checks that it made its calls.
func (c *Client) Floor(ctx context.Context) error {
	_, _, err := c.turnRequest(ctx, "floor")
	return err
}

// turnRequest posts a turn's request with a new Idempotency-Key and
// requires 200; label names the request in errors.
func (c *Client) turnRequest(ctx context.Context, label string) (key string, body []byte, err error) {
	key = c.NewIdempotencyKey()
	status, b, err := c.do(ctx, http.MethodPost, "/v1/installs/"+InstallID+"/turns", c.user,
		map[string]string{"Prefer": "wait=25", "Idempotency-Key": key}, TurnBody)
	if err != nil {
		return key, nil, err
	}
	if status != http.StatusOK {
		return key, b, fmt.Errorf("%s: %d %s", label, status, b)
	}
	return key, b, nil
}

// CheckRun checks an AgentRun's JSON: succeeded, with the script's steps
// and tool calls, all ok, and the script's final answer. It returns the
// run's id.
func CheckRun(b []byte) (string, error) {
	var r runs.Run
	if err := json.Unmarshal(b, &r); err != nil {
		return "", fmt.Errorf("run: %w", err)
	}
	calls := 0
	for _, s := range r.Steps {
		for _, tc := range s.ToolCalls {
			if !tc.OK {
				return "", fmt.Errorf("run: a tool call failed: %s", b)
			}
			calls++
		}
	}
	if r.Status != runs.StatusSucceeded || len(r.Steps) != script.Steps || calls != script.Calls || r.FinalMessage != script.Final {
		return "", fmt.Errorf("run did not follow the script (status %s %s %s, %d steps, %d tool calls, final %q)",
			r.Status, r.ErrorKind, r.ErrorMessage, len(r.Steps), calls, r.FinalMessage)
	}
	return r.RunID, nil
}

func (c *Client) do(ctx context.Context, method, path, token string, headers map[string]string, body string) (int, []byte, error) {
	return localstack.CallWith(ctx, c.HTTP, method, c.Base+path, token, headers, body)
}
