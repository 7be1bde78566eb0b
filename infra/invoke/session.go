package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/commonly/runtime/infra/awslocal/eventbridgelocal"
	"github.com/commonly/runtime/infra/awslocal/lambdalocal"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/store"
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
	// SessionDir, when set, keeps the embedded DynamoDB's items between
	// invokes (SESSION=dir): loaded at start, saved by save.
	SessionDir string
}

// session is one function running under the emulator, with its local
// AWS (infra/awslocal): the embedded DynamoDB (tables by
// store.CreateTables), the EventBridge stand-in and the Lambda stand-in
// for its self-invokes.
type session struct {
	fn      *function
	pkg     string // the bootstrap's main package
	db      *dynamodblocal.Server
	bus     *eventbridgelocal.Server
	lambda  *lambdalocal.Server
	emu     *rie.Emulator
	timeout time.Duration
	home    string
	tables  []string
	dir     string // SessionDir
}

// response is what an invocation returned, and what the asynchronous
// invocations it made returned.
type response struct {
	Body          json.RawMessage
	FunctionError bool
	Async         []response
}

func start(ctx context.Context, cfg config) (s *session, err error) {
	t, err := loadTemplate(cfg.Template, dynamodblocal.Region)
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
	if s.db, err = dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", store.Tables{State: state, Runs: runs}); err != nil {
		return nil, err
	}
	s.tables = []string{state, runs}
	if s.dir = cfg.SessionDir; s.dir != "" {
		if err := os.MkdirAll(s.dir, 0o755); err != nil {
			return nil, err
		}
		n, err := loadState(ctx, s.db.URL, s.dir)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(cfg.Logs, "make invoke: session %s: %d items restored\n", s.dir, n)
	}
	if s.bus, err = eventbridgelocal.Start(eventbridgelocal.Config{EventsFile: cfg.EventsFile, Region: dynamodblocal.Region}); err != nil {
		return nil, err
	}
	if s.lambda, err = lambdalocal.Start(f.ID, localPrefix+"lambda:"+dynamodblocal.Region+":"+localAccount+":function:"+f.ID); err != nil {
		return nil, err
	}
	if s.home, err = os.MkdirTemp("", "invoke-home-"); err != nil {
		return nil, err
	}
	if s.emu, err = rie.Start(cfg.RIE, exe, s.processEnv(env), cfg.Logs); err != nil {
		return nil, err
	}
	return s, nil
}

// processEnv is the emulator's environment: the function's variables,
// the variables Lambda itself sets (from the template), and the local
// endpoints, nothing of this process's own.
func (s *session) processEnv(fnEnv map[string]string) []string {
	lambdaEnv := map[string]string{
		"PATH":                            "/usr/local/bin:/usr/bin:/bin",
		"AWS_LAMBDA_FUNCTION_NAME":        s.fn.ID,
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(s.fn.Props.Timeout),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(s.fn.Props.MemorySize),
		eventbridgelocal.EndpointVar:      s.bus.URL,
		lambdalocal.EndpointVar:           s.lambda.URL,
	}
	if lc := s.fn.Props.LoggingConfig; lc.LogFormat != "" {
		lambdaEnv["AWS_LAMBDA_LOG_FORMAT"] = lc.LogFormat
		lambdaEnv["AWS_LAMBDA_LOG_LEVEL"] = lc.ApplicationLogLevel
	}
	return rie.Env(s.home, lambdaEnv, s.db.AWSEnv(), fnEnv)
}

// invoke posts one event and then runs, in order, the asynchronous
// invocations it made of this function.
func (s *session) invoke(ctx context.Context, payload []byte) (response, error) {
	resp, err := s.post(ctx, payload)
	if err != nil {
		return resp, err
	}
	for round := 0; round < maxAsyncRounds; round++ {
		queued := s.lambda.Take()
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
	body, err := s.emu.Invoke(ctx, payload)
	if err != nil {
		return response{}, fmt.Errorf("invoke %s: %w", s.fn.ID, err)
	}
	var fnErr struct {
		Type string `json:"errorType"`
	}
	_ = json.Unmarshal(body, &fnErr)
	return response{Body: json.RawMessage(bytes.TrimSpace(body)), FunctionError: fnErr.Type != ""}, nil
}

// save keeps the session's items for the next invoke (no session: nothing).
func (s *session) save(ctx context.Context) error {
	if s.dir == "" {
		return nil
	}
	return saveState(ctx, s.db.URL, s.dir, s.tables...)
}

func (s *session) close() error {
	var errs []error
	if s.emu != nil {
		_ = s.emu.Close() // killed: its exit status says nothing
	}
	if s.lambda != nil {
		errs = append(errs, s.lambda.Close())
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
