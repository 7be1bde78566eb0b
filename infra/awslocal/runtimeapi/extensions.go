package runtimeapi

import (
	"encoding/json"
	"io"
	"net/http"
)

// extension is a registered extension; waiting is its open event/next
// (nil while it works on the last event: the next invocation waits).
type extension struct {
	name    string
	waiting chan []byte
}

// invoke hands x an INVOKE event; s.mu is held.
func (x *extension) invoke(c *Call, arn string) {
	ev, _ := json.Marshal(map[string]any{
		"eventType": "INVOKE", "deadlineMs": c.deadline.UnixMilli(), "requestId": c.RequestID,
		"invokedFunctionArn": arn, "tracing": map[string]string{"type": "X-Amzn-Trace-Id", "value": c.inv.TraceID},
	})
	x.send(ev)
}

func (x *extension) send(ev []byte) {
	if x.waiting != nil {
		x.waiting <- ev
		x.waiting = nil
	}
}

// register is POST /2020-01-01/extension/register.
func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	name := r.Header.Get("Lambda-Extension-Name")
	var body struct {
		Events []string `json:"events"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<10)).Decode(&body); err != nil || name == "" {
		renderError(w, http.StatusForbidden, "Extension.InvalidRequestFormat", "a register needs Lambda-Extension-Name and {\"events\": [...]}")
		return
	}
	// Only internal extensions run here (no /opt/extensions), and Lambda
	// lets those register for INVOKE alone.
	for _, e := range body.Events {
		if e != "INVOKE" {
			renderError(w, http.StatusForbidden, "Extension.InvalidEventType", "an internal extension may register for INVOKE only, not "+e)
			return
		}
	}
	id := newID()
	s.mu.Lock()
	s.extensions[id] = &extension{name: name}
	s.mu.Unlock()
	w.Header().Set("Lambda-Extension-Identifier", id)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]string{"functionName": s.cfg.FunctionName, "functionVersion": "$LATEST", "handler": "bootstrap"})
}

// extensionNext is GET /2020-01-01/extension/event/next: the extension is
// done with its last event and waits for the next.
func (s *Server) extensionNext(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	x, ok := s.extensions[r.Header.Get("Lambda-Extension-Identifier")]
	if !ok {
		s.mu.Unlock()
		renderError(w, http.StatusForbidden, "Extension.UnknownExtensionIdentifier", "unknown Lambda-Extension-Identifier")
		return
	}
	ch := make(chan []byte, 1)
	x.waiting = ch
	s.mu.Unlock()
	s.dispatch()
	select {
	case ev := <-ch:
		w.Header().Set("Lambda-Extension-Event-Identifier", newID())
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(ev)
	case <-s.closing:
	case <-r.Context().Done():
		// The extension went away: the environment no longer waits for it.
		s.mu.Lock()
		delete(s.extensions, r.Header.Get("Lambda-Extension-Identifier"))
		s.mu.Unlock()
		s.dispatch()
	}
}
