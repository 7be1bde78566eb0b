// Package childproc starts the benchmarks' own processes (the turn
// process, the events process): each prints one JSON line of its URLs
// when it serves, and answers GET {stats}/stats.
package childproc

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"syscall"
)

// Proc is a running process with its ready line.
type Proc struct {
	Cmd    *exec.Cmd
	Stderr *bytes.Buffer
	// Ready is its first line's URLs by name ("api", "stats", "url").
	Ready map[string]string
}

// Start starts bin with args and reads its ready line; a process that
// prints none is killed, its log in the error.
func Start(ctx context.Context, bin string, args ...string) (*Proc, error) {
	p := &Proc{Cmd: exec.CommandContext(ctx, bin, args...), Stderr: &bytes.Buffer{}}
	p.Cmd.Stderr = p.Stderr
	out, err := p.Cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.Cmd.Start(); err != nil {
		return nil, err
	}
	line, err := bufio.NewReader(out).ReadBytes('\n')
	if err != nil || json.Unmarshal(line, &p.Ready) != nil {
		_ = p.Cmd.Process.Kill()
		_ = p.Cmd.Wait()
		return nil, fmt.Errorf("%s did not start: %v\n%s", bin, err, p.Stderr.String())
	}
	return p, nil
}

// Stop ends the process as Lambda ends an environment (SIGTERM) and
// waits for it.
func (p *Proc) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	_ = p.Cmd.Wait()
}

// Stats reads GET {stats}/stats into v.
func (p *Proc) Stats(ctx context.Context, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Ready["stats"]+"/stats", nil)
	if err != nil {
		return err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	return json.NewDecoder(res.Body).Decode(v)
}
