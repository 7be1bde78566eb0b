package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// ExtensionName is the internal Lambda extension that exports each
// invocation's kept spans after the function has answered.
const ExtensionName = "commonly-traces"

// afterResponse moves an invocation's export past its response. In
// Lambda it is an internal extension (the Extensions API, registered
// for INVOKE events): Lambda returns the function's response at once
// but freezes the environment, and starts no other invocation in it,
// only once every extension has asked for its next event, so the
// extension asks only after the spans are out. The caller no longer
// waits for X-Ray, and the export's wait for its answer overlaps the
// runtime's own calls to the Runtime API instead of adding one more
// pause to the invocation. Where no Lambda runs (the benchmark's turn
// process serves requests itself), a gate stands in for the extension:
// a request starts only once the last one's export is done.
type afterResponse struct {
	// ready is the handler's word that its invocation is over and its
	// spans are kept (one per invocation; WithFlush).
	ready chan struct{}
	// alive is false once the loop has stopped; WithFlush then exports
	// itself.
	alive atomic.Bool
	// free, with the gate, holds the token a request takes to start.
	free chan struct{}
}

// extensionsAPI is the Extensions API of the Lambda Runtime API at
// AWS_LAMBDA_RUNTIME_API.
type extensionsAPI struct {
	base   string // http://host:port/2020-01-01/extension/
	id     string
	client *http.Client
}

// extensionEvent is the part of a next event the loop reads.
type extensionEvent struct {
	EventType  string `json:"eventType"`
	DeadlineMs int64  `json:"deadlineMs"`
}

// registerExtension registers the extension for INVOKE events (an
// internal extension may take no other). It must run in the function's
// init, before the runtime asks for its first invocation.
func registerExtension(ctx context.Context, runtimeAPI string) (*extensionsAPI, error) {
	x := &extensionsAPI{base: "http://" + runtimeAPI + "/2020-01-01/extension/", client: &http.Client{}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.base+"register", strings.NewReader(`{"events":["INVOKE"]}`))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Lambda-Extension-Name", ExtensionName)
	req.Header.Set("Content-Type", "application/json")
	resp, err := x.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("tracing: registering the %s extension: %w", ExtensionName, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("tracing: registering the %s extension: %s", ExtensionName, resp.Status)
	}
	if x.id = resp.Header.Get("Lambda-Extension-Identifier"); x.id == "" {
		return nil, fmt.Errorf("tracing: registering the %s extension: no identifier", ExtensionName)
	}
	return x, nil
}

// next asks for the next event: it returns when the next invocation
// starts. Asking tells Lambda that this extension is done with the last.
func (x *extensionsAPI) next() (extensionEvent, error) {
	req, err := http.NewRequest(http.MethodGet, x.base+"event/next", nil)
	if err != nil {
		return extensionEvent{}, err
	}
	req.Header.Set("Lambda-Extension-Identifier", x.id)
	resp, err := x.client.Do(req)
	if err != nil {
		return extensionEvent{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return extensionEvent{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return extensionEvent{}, fmt.Errorf("next event: %s", resp.Status)
	}
	var ev extensionEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return extensionEvent{}, fmt.Errorf("next event: %w", err)
	}
	return ev, nil
}

// runExtension is the extension's loop: wait for an invocation, wait for
// its handler to end (at most until the invocation's deadline, after
// which Lambda ends it anyway), export, ask for the next.
func (p *Provider) runExtension(x *extensionsAPI, a *afterResponse, log *slog.Logger) {
	defer a.alive.Store(false)
	for {
		ev, err := x.next()
		if err != nil {
			log.Warn("the traces extension stopped; each invocation exports its own spans", "err", err)
			return
		}
		if ev.EventType != "INVOKE" {
			p.flushBounded(context.Background(), log)
			return
		}
		wait := time.Until(time.UnixMilli(ev.DeadlineMs))
		if ev.DeadlineMs == 0 || wait > 15*time.Minute {
			wait = 15 * time.Minute // Lambda's longest invocation
		}
		t := time.NewTimer(wait)
		select {
		case <-a.ready:
		case <-t.C:
		}
		t.Stop()
		p.flushBounded(context.Background(), log)
	}
}

// runGate is the gate's loop: export each invocation's spans after its
// response, then let the next request start.
func (p *Provider) runGate(a *afterResponse, log *slog.Logger) {
	for range a.ready {
		p.flushBounded(context.Background(), log)
		a.free <- struct{}{}
	}
}

// ExportAfterResponse makes each request's export run after its
// response, the next request starting only once it is done: what the
// Lambda extension does in AWS (ForFunction sets it up there), for a
// process that serves requests itself (the benchmark's turn process).
// It applies to WithFlush and WithFlushHTTP handlers; off, it does
// nothing.
func (p *Provider) ExportAfterResponse(log *slog.Logger) error {
	if !p.Enabled() {
		return nil
	}
	if p.after != nil {
		return errors.New("tracing: the export already runs after the response")
	}
	a := &afterResponse{ready: make(chan struct{}, 1), free: make(chan struct{}, 1)}
	a.free <- struct{}{}
	a.alive.Store(true)
	p.after = a
	go p.runGate(a, log)
	return nil
}

// exportAfterResponseInLambda registers the extension and starts its
// loop; on failure each invocation keeps exporting its own spans.
func (p *Provider) exportAfterResponseInLambda(ctx context.Context, runtimeAPI string, log *slog.Logger) error {
	x, err := registerExtension(ctx, runtimeAPI)
	if err != nil {
		return err
	}
	a := &afterResponse{ready: make(chan struct{}, 1)}
	a.alive.Store(true)
	p.after = a
	go p.runExtension(x, a, log)
	return nil
}

// invocationStart waits, with the gate, for the last request's export.
func (p *Provider) invocationStart() {
	if a := p.after; a != nil && a.free != nil {
		<-a.free
	}
}

// invocationDone hands the invocation's spans to the extension (or the
// gate), or exports them now when there is none or it has stopped.
func (p *Provider) invocationDone(ctx context.Context, log *slog.Logger) {
	if a := p.after; a != nil && a.alive.Load() {
		select {
		case a.ready <- struct{}{}:
			return
		default:
		}
	}
	p.flushBounded(ctx, log)
	if a := p.after; a != nil && a.free != nil {
		a.free <- struct{}{}
	}
}
