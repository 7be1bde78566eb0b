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
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/commonly/runtime/bench/internal/otlpsink"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/awslocal/rie"
	"github.com/commonly/runtime/infra/localstack"
)

// cold is the bootstrap's size and cold starts.
type cold struct {
	sizeBytes int64
	// rieMs: from starting the emulator (which starts the bootstrap) to
	// the first invocation's answer, polled every 250 µs.
	rieMs []float64
	// aloneMs: from starting the bootstrap to its first answer posted to
	// a minimal Runtime API served here, without the emulator.
	aloneMs []float64
	// aloneCPUMs: the bootstrap's CPU time to its first answer, alone.
	aloneCPUMs []float64
	// emptyMs: rieMs of an empty function (o.emptyBootstrap), the floor.
	emptyMs    []float64
	emptyBytes int64
}

func coldStarts(ctx context.Context, o options) (cold, error) {
	fi, err := os.Stat(o.bootstrap)
	if err != nil {
		return cold{}, fmt.Errorf("%w (make build builds it)", err)
	}
	c := cold{sizeBytes: fi.Size()}
	event, err := os.ReadFile(o.usageEvent)
	if err != nil {
		return cold{}, err
	}
	st, err := localstack.Start(ctx, localstack.Config{Env: turnstack.Env(nil)})
	if err != nil {
		return cold{}, err
	}
	defer st.Close()
	home, err := os.MkdirTemp("", "bench-cold-")
	if err != nil {
		return cold{}, err
	}
	defer os.RemoveAll(home)
	vars := st.Endpoints()
	if o.coldTraced {
		// Every cold start's spans exported to a collector here.
		sink := &otlpsink.Sink{}
		addr, stop, err := serveLoopback(sink)
		if err != nil {
			return cold{}, err
		}
		defer stop()
		vars["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"] = "http://" + addr + "/v1/traces"
	}
	env := coldEnv(home, vars)
	for i := range o.coldStarts {
		ms, err := rieColdStart(ctx, o.rie, o.bootstrap, env, event)
		if err != nil {
			return cold{}, fmt.Errorf("under the emulator, start %d: %w", i+1, err)
		}
		c.rieMs = append(c.rieMs, ms)
		ms, cpu, err := aloneColdStart(ctx, o.bootstrap, env, event)
		if err != nil {
			return cold{}, fmt.Errorf("alone, start %d: %w", i+1, err)
		}
		c.aloneMs, c.aloneCPUMs = append(c.aloneMs, ms), append(c.aloneCPUMs, cpu)
		if o.emptyBootstrap != "" {
			ms, err = rieColdStart(ctx, o.rie, o.emptyBootstrap, env, event)
			if err != nil {
				return cold{}, fmt.Errorf("the empty function under the emulator, start %d: %w", i+1, err)
			}
			c.emptyMs = append(c.emptyMs, ms)
		}
	}
	if o.emptyBootstrap != "" {
		fi, err := os.Stat(o.emptyBootstrap)
		if err != nil {
			return cold{}, err
		}
		c.emptyBytes = fi.Size()
		logf("cold starts of the empty function under the emulator (ms): %v", round(c.emptyMs))
	}
	logf("cold starts under the emulator (ms): %v", round(c.rieMs))
	logf("cold starts of the bootstrap alone (ms): %v, CPU (ms): %v", round(c.aloneMs), round(c.aloneCPUMs))
	return c, nil
}

// rieColdStart starts bootstrap under the emulator rie and times it to
// the answer of its first invocation.
func rieColdStart(ctx context.Context, rieBin, bootstrap string, env []string, event []byte) (float64, error) {
	emu, err := rie.Start(rieBin, bootstrap, env, nil)
	if err != nil {
		return 0, err
	}
	defer emu.Close()
	fail := func(err error) error { return fmt.Errorf("%w\n%s", err, tail(emu.Output(), 2000)) }
	// A client of its own: no connection is reused across starts.
	hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for deadline := emu.Started.Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(250 * time.Microsecond) {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		res, err := hc.Post(emu.URL, "application/json", bytes.NewReader(event))
		if err != nil {
			continue // not listening yet
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		elapsed := time.Since(emu.Started)
		if err := checkUsageAnswer(res.StatusCode, body); err != nil {
			return 0, fail(err)
		}
		return float64(elapsed) / 1e6, nil
	}
	return 0, fail(errors.New("no answer in 10 s"))
}

// coldProc is a bootstrap started alone for one cold start.
type coldProc struct {
	cmd   *exec.Cmd
	logs  bytes.Buffer // its stdout and stderr
	start time.Time    // just before it started
}

// startCold starts name with args and env; stop kills it and waits.
func startCold(ctx context.Context, env []string, name string, args ...string) (*coldProc, error) {
	p := &coldProc{cmd: exec.CommandContext(ctx, name, args...)}
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = &p.logs, &p.logs
	p.start = time.Now()
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *coldProc) stop() {
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

// fail adds the end of the process's output to err.
func (p *coldProc) fail(err error) error {
	return fmt.Errorf("%w\n%s", err, tail(p.logs.String(), 2000))
}

// checkUsageAnswer checks the function's answer to the usage event.
func checkUsageAnswer(status int, body []byte) error {
	var out struct {
		StatusCode int `json:"statusCode"`
	}
	if status != http.StatusOK || json.Unmarshal(body, &out) != nil || out.StatusCode != http.StatusOK {
		return fmt.Errorf("first invocation answered %d: %s", status, body)
	}
	return nil
}

// aloneColdStart serves the Lambda Runtime API's three routes the Go
// runtime uses (next, response, error) and times the bootstrap from its
// start to its first response.
//
// It also returns the process's CPU time to then (user and system, read
// from its end once killed right after the answer): the cold start's own
// work, which a busy machine's neighbours stretch in wall time but not in
// CPU.
func aloneColdStart(ctx context.Context, bootstrap string, env []string, event []byte) (wallMs, cpuMs float64, err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, 0, err
	}
	type result struct {
		at   time.Time
		body []byte
		err  error
	}
	done := make(chan result, 1)
	var served atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", func(w http.ResponseWriter, r *http.Request) {
		if !served.CompareAndSwap(false, true) { // one invocation: later polls wait for the kill
			<-r.Context().Done()
			return
		}
		w.Header().Set("Lambda-Runtime-Aws-Request-Id", "bench-cold-1")
		w.Header().Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(time.Now().Add(30*time.Second).UnixMilli(), 10))
		w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:000000000000:function:turn")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(event)
	})
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", func(w http.ResponseWriter, r *http.Request) {
		at := time.Now()
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		done <- result{at: at, body: body}
	})
	mux.HandleFunc("POST /2018-06-01/runtime/", func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.WriteHeader(http.StatusAccepted)
		done <- result{err: fmt.Errorf("%s: %s", r.URL.Path, body)}
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()

	p, err := startCold(ctx, append(append([]string(nil), env...), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_FUNCTION_NAME=turn", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST"), bootstrap)
	if err != nil {
		return 0, 0, err
	}
	defer p.stop()
	select {
	case r := <-done:
		if r.err != nil {
			return 0, 0, p.fail(r.err)
		}
		if err := checkUsageAnswer(http.StatusOK, r.body); err != nil {
			return 0, 0, err
		}
		p.stop()
		st := p.cmd.ProcessState
		return float64(r.at.Sub(p.start)) / 1e6, float64(st.UserTime()+st.SystemTime()) / 1e6, nil
	case <-time.After(10 * time.Second):
		return 0, 0, p.fail(errors.New("no answer in 10 s"))
	}
}

func round(v []float64) []string {
	out := make([]string, len(v))
	for i, x := range v {
		out[i] = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(x, 'f', 1, 64), "0"), ".")
	}
	return out
}

// coldEnv is the turn function's environment for the cold starts: the
// local stack's tables on its stand-ins, inline dispatch, and the
// offline model and local sandbox named explicitly, as the function
// refuses to start without a model and a sandbox (the usage event it
// serves uses neither).
func coldEnv(home string, awsEnv map[string]string) []string {
	return rie.Env(home, map[string]string{
		"STATE_TABLE": turnstack.Tables.State, "RUNS_TABLE": turnstack.Tables.Runs, "TURN_DISPATCH": "inline",
		"LLM_MODE": "offline", "SANDBOX": "local",
	}, awsEnv)
}
