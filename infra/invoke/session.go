package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/commonly/runtime/infra/local/eventbus"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/store/embedded"
)

// maxAsyncRounds bounds the invocations an invocation's asynchronous
// invocations may chain (a turn dispatches one).
const maxAsyncRounds = 10

// config is one `make invoke`.
type config struct {
	Template   string    // cdk.out/<stack>.template.json
	Function   string    // construct id (TurnFunction), logical id or path
	EnvFile    string    // SAM env-vars file; "" for none
	RIE        string    // the aws-lambda-rie binary
	BinDir     string    // where `make build` put bin/<function>/bootstrap
	EventsFile string    // EventBridge events, JSON lines; "" for none
	Logs       io.Writer // the function's and the emulator's output
}

// session is one function running under the emulator, with its local
// AWS: the embedded DynamoDB (tables by store.CreateTables), the
// EventBridge stand-in and the Lambda stand-in for its self-invokes.
type session struct {
	fn      *function
	pkg     string // the bootstrap's main package
	db      *embedded.Server
	bus     *eventbus.Server
	lambda  *lambdaStandIn
	cmd     *exec.Cmd
	addr    string
	timeout time.Duration
	home    string
}

// response is what an invocation returned, and what the asynchronous
// invocations it made returned.
type response struct {
	Body          json.RawMessage
	FunctionError bool
	Async         []response
}

func start(ctx context.Context, cfg config) (s *session, err error) {
	t, err := loadTemplate(cfg.Template, embedded.Region)
	if err != nil {
		return nil, err
	}
	f, err := t.function(cfg.Function)
	if err != nil {
		return nil, err
	}
	s = &session{fn: f, timeout: time.Duration(f.Props.Timeout) * time.Second}
	defer func() {
		if err != nil {
			_ = s.close()
			s = nil
		}
	}()
	var exe string
	if exe, s.pkg, err = bootstrap(f, cfg.BinDir); err != nil {
		return nil, err
	}
	overrides, ignored, err := envOverrides(cfg.EnvFile, f)
	if err != nil {
		return nil, err
	}
	if len(ignored) > 0 {
		fmt.Fprintf(cfg.Logs, "make invoke: %s does not declare %s: ignored, as sam local invoke does\n", f.ID, strings.Join(ignored, ", "))
	}
	env, err := t.environment(f, overrides)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.ID, err)
	}
	state, runs, err := t.tables()
	if err != nil {
		return nil, err
	}
	if s.db, err = embedded.StartWithTables(ctx, "127.0.0.1:0", store.Tables{State: state, Runs: runs}); err != nil {
		return nil, err
	}
	if s.bus, err = eventbus.Start("127.0.0.1:0", eventbus.Config{EventsFile: cfg.EventsFile, Region: embedded.Region}); err != nil {
		return nil, err
	}
	if s.lambda, err = startLambdaStandIn([]string{f.ID, localPrefix + "lambda:" + embedded.Region + ":" + localAccount + ":function:" + f.ID}); err != nil {
		return nil, err
	}
	if s.home, err = os.MkdirTemp("", "invoke-home-"); err != nil {
		return nil, err
	}
	s.addr, err = freeAddr()
	if err != nil {
		return nil, err
	}
	apiAddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s.cmd = exec.Command(cfg.RIE, "--runtime-interface-emulator-address", s.addr, "--runtime-api-address", apiAddr, exe)
	s.cmd.Env = s.processEnv(env)
	s.cmd.Stdout, s.cmd.Stderr = cfg.Logs, cfg.Logs
	// Its own process group, so that closing ends the bootstrap with it.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := s.cmd.Start(); err != nil {
		s.cmd = nil
		return nil, fmt.Errorf("start the emulator %s: %w", cfg.RIE, err)
	}
	return s, waitListening(ctx, s.addr, 10*time.Second)
}

// processEnv is the emulator's environment: the function's variables,
// the variables Lambda itself sets (from the template), and the local
// endpoints, nothing of this process's own.
func (s *session) processEnv(fnEnv map[string]string) []string {
	env := map[string]string{
		"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": s.home,
		"AWS_LAMBDA_FUNCTION_NAME":        s.fn.ID,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(s.fn.Props.Timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(s.fn.Props.MemorySize),
		eventbus.EndpointVar:              s.bus.URL,
		"AWS_ENDPOINT_URL_LAMBDA":         s.lambda.URL,
	}
	if lc := s.fn.Props.LoggingConfig; lc.LogFormat != "" {
		env["AWS_LAMBDA_LOG_FORMAT"] = lc.LogFormat
		env["AWS_LAMBDA_LOG_LEVEL"] = lc.ApplicationLogLevel
	}
	for k, v := range s.db.AWSEnv() {
		env[k] = v
	}
	for k, v := range fnEnv {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// invoke posts one event and then runs, in order, the asynchronous
// invocations it made of this function.
func (s *session) invoke(ctx context.Context, payload []byte) (response, error) {
	resp, err := s.post(ctx, payload)
	if err != nil {
		return resp, err
	}
	for round := 0; round < maxAsyncRounds; round++ {
		queued := s.lambda.take()
		if len(queued) == 0 {
			return resp, nil
		}
		for _, q := range queued {
			a, err := s.post(ctx, q.Payload)
			if err != nil {
				return resp, fmt.Errorf("asynchronous invocation: %w", err)
			}
			resp.Async = append(resp.Async, a)
		}
	}
	return resp, fmt.Errorf("more than %d rounds of asynchronous invocations", maxAsyncRounds)
}

// post invokes the function through the emulator once.
func (s *session) post(ctx context.Context, payload []byte) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+10*time.Second)
	defer cancel()
	url := "http://" + s.addr + "/2015-03-31/functions/function/invocations"
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(payload))
	if err != nil {
		return response{}, err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{}, fmt.Errorf("invoke %s: %w", s.fn.ID, err)
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return response{}, err
	}
	if res.StatusCode != http.StatusOK {
		return response{}, fmt.Errorf("invoke %s: the emulator answered %d: %s", s.fn.ID, res.StatusCode, body)
	}
	var fnErr struct {
		Type string `json:"errorType"`
	}
	_ = json.Unmarshal(body, &fnErr)
	return response{Body: json.RawMessage(bytes.TrimSpace(body)), FunctionError: fnErr.Type != ""}, nil
}

func (s *session) close() error {
	var errs []error
	if s.cmd != nil {
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		_ = s.cmd.Wait()
	}
	if s.lambda != nil {
		errs = append(errs, s.lambda.close())
	}
	if s.bus != nil {
		errs = append(errs, s.bus.Close())
	}
	if s.db != nil {
		errs = append(errs, s.db.Close())
	}
	if s.home != "" {
		errs = append(errs, os.RemoveAll(s.home))
	}
	return errors.Join(errs...)
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitListening waits for the emulator's port: it is another process, so
// there is nothing to wait on but its socket.
func waitListening(ctx context.Context, addr string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		c, err := (&net.Dialer{Timeout: time.Second}).DialContext(ctx, "tcp", addr)
		if err == nil {
			return c.Close()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the emulator did not listen on %s within %s: %w", addr, limit, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}
