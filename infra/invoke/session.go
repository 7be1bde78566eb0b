package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

// config is one `make invoke`.
type config struct {
	Template   string    // cdk.out/<stack>.template.json
	Function   string    // construct id (TurnFunction), logical id or path
	EnvFile    string    // SAM env-vars file; "" for none
	RIE        string    // the aws-lambda-rie binary
	BinDir     string    // where `make build` put bin/<function>/bootstrap
	EventsFile string    // EventBridge events, JSON lines; "" for none
	Logs       io.Writer // the function's and the emulator's output
	// SessionDir, when set, keeps the embedded DynamoDB's items between
	// invokes (SESSION=dir): loaded at start, saved by save.
	SessionDir string
	// RetryDelay is the wait before a failed asynchronous invocation's
	// retry (Lambda's two retries; zero: a second).
	RetryDelay time.Duration
}

// session is one function running under the emulator on the local
// stack (infra/localstack): the embedded DynamoDB (tables by
// store.CreateTables), the EventBridge stand-in, the Lambda stand-in for
// its self-invokes, each run through the same bootstrap and retried as
// Lambda retries, and the local pod backend and broker when the
// environment names none.
type session struct {
	fn      *function
	pkg     string // the bootstrap's main package
	st      *localstack.Stack
	boot    *localstack.Bootstrap
	timeout time.Duration
	tables  []string
	dir     string // SessionDir
	// streamFrom is where the runs stream stood after the restore: what
	// follows is this invoke's.
	streamFrom uint64
}

// response is what an invocation returned, and what the asynchronous
// invocations it made returned, each attempt.
type response struct {
	Body          json.RawMessage
	FunctionError bool
	Async         []response
}

func start(ctx context.Context, cfg config) (_ *session, err error) {
	t, err := loadTemplate(cfg.Template, dynamodblocal.Region)
	if err != nil {
		return nil, err
	}
	f, err := t.function(cfg.Function)
	if err != nil {
		return nil, err
	}
	s := &session{fn: f, timeout: time.Duration(f.Props.Timeout) * time.Second}
	defer func() {
		if err != nil {
			s.close()
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
	s.tables = []string{state, runs}
	// The variables Lambda itself sets, from the template.
	env["STATE_TABLE"], env["RUNS_TABLE"] = state, runs
	env["AWS_LAMBDA_FUNCTION_NAME"] = f.ID
	env["AWS_LAMBDA_FUNCTION_TIMEOUT"] = strconv.Itoa(f.Props.Timeout)
	env["AWS_LAMBDA_FUNCTION_MEMORY_SIZE"] = strconv.Itoa(f.Props.MemorySize)
	if lc := f.Props.LoggingConfig; lc.LogFormat != "" {
		env["AWS_LAMBDA_LOG_FORMAT"], env["AWS_LAMBDA_LOG_LEVEL"] = lc.LogFormat, lc.ApplicationLogLevel
	}
	if s.dir = cfg.SessionDir; s.dir != "" {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, err
		}
	}
	if s.st, err = localstack.Start(ctx, localstack.Config{
		Env: env, Pods: localstack.NewPods(), Emulator: cfg.RIE, RetryDelay: cfg.RetryDelay,
		EventBridge: eventbridgelocal.Config{EventsFile: cfg.EventsFile},
		Log:         slog.New(slog.NewTextHandler(cfg.Logs, &slog.HandlerOptions{Level: slog.LevelWarn})),
	}); err != nil {
		return nil, err
	}
	if s.dir != "" {
		n, err := loadState(ctx, s.st.DynamoDBURL, s.dir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Logs, "make invoke: session %s: %d items restored\n", s.dir, n)
		if _, s.streamFrom, err = s.st.DB.StreamRecords(ctx, runs, 0); err != nil {
			return nil, err
		}
	}
	kind := localstack.Function(strings.TrimPrefix(s.pkg, module+"functions/"))
	if s.boot, err = s.st.Bootstrap(kind, exe, nil, cfg.Logs); err != nil {
		return nil, err
	}
	return s, nil
}

// module is this repository's module path, which the functions' main
// packages are under.
const module = "github.com/commonly/runtime/"

// invoke posts one event, then waits for the asynchronous invocations it
// made of this function, run by the Lambda stand-in through the same
// bootstrap (retried as Lambda retries them), and returns every attempt.
func (s *session) invoke(ctx context.Context, payload []byte) (response, error) {
	before := len(s.st.Invocations())
	resp, err := s.post(ctx, payload)
	s.st.Lambda.Wait()
	for _, inv := range s.st.Invocations()[before:] {
		resp.Async = append(resp.Async, answer(inv.Answer, inv.Err))
	}
	return resp, err
}

// post invokes the function through the emulator once.
func (s *session) post(ctx context.Context, payload []byte) (response, error) {
	ctx, cancel := context.WithTimeout(ctx, s.timeout+10*time.Second)
	defer cancel()
	body, err := s.boot.Invoke(ctx, payload)
	var fnErr *localstack.FunctionError
	if err != nil && !errors.As(err, &fnErr) {
		return response{}, fmt.Errorf("invoke %s: %w", s.fn.ID, err)
	}
	return answer(body, err), nil
}

// answer is one invocation's response: its body, and whether the
// function failed.
func answer(body []byte, err error) response {
	if len(bytes.TrimSpace(body)) == 0 && err != nil {
		body, _ = json.Marshal(map[string]string{"errorMessage": err.Error()})
	}
	return response{Body: json.RawMessage(bytes.TrimSpace(body)), FunctionError: err != nil}
}

// save keeps the session's items for the next invoke, and the runs
// stream's records it wrote for the alarm function (no session: nothing).
func (s *session) save(ctx context.Context) error {
	if s.dir == "" {
		return nil
	}
	if err := s.keepStream(ctx); err != nil {
		return err
	}
	return saveState(ctx, s.st.DynamoDBURL, s.dir, s.tables...)
}

func (s *session) close() {
	if s.st != nil {
		s.st.Close()
	}
}
