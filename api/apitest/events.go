package apitest

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// OtherFunction reports an operation served by a function other than
// the turn function (x-function: the events function's stream), which
// the turn handler neither routes nor tests.
func OtherFunction(op *openapi3.Operation) bool { return otherFunction(op.Extensions) }

// otherFunction reports an x-function naming a function other than the
// turn function, on an operation or a problem schema only it answers.
func otherFunction(ext map[string]any) bool {
	f, ok := ext["x-function"]
	return ok && f != "turn"
}

// problemSchema is the name of a problem type's schema: "too_many_streams"
// is TooManyStreamsProblem.
func problemSchema(slug string) string {
	var b strings.Builder
	for _, part := range strings.Split(slug, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String() + "Problem"
}

// transportHeader are headers HTTP itself (or Lambda's function URL)
// sets, which the document does not list.
var transportHeader = map[string]bool{"Content-Type": true, "Content-Length": true, "Date": true, "Connection": true, "Transfer-Encoding": true, "Allow": true}

// watchPath is the events function's route.
const watchPath = "/v1/runs/{runId}/events"

// ValidateWatchResponse checks an answer of the events route other than
// the stream (a 204, or a problem) against the document: its status is
// documented for watchRun, so is each header, a required one is there,
// and a problem body validates against the status's schema. What it saw
// counts for MissingWatch.
func (v *Validator) ValidateWatchResponse(status int, header http.Header, body []byte) error {
	item := v.doc.Paths.Value(watchPath)
	if item == nil || item.Get == nil {
		return fmt.Errorf("the document has no GET %s", watchPath)
	}
	op := item.Get
	ref := op.Responses.Status(status)
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("status %d is not documented for %s", status, op.OperationID)
	}
	v.see(op.OperationID + " " + strconv.Itoa(status))
	r := ref.Value
	var errs []error
	for name := range header {
		if !transportHeader[http.CanonicalHeaderKey(name)] && !documentedHeader(r, name) {
			errs = append(errs, fmt.Errorf("response header %q is not documented for %s %d", name, op.OperationID, status))
		}
	}
	for name, h := range r.Headers {
		if h.Value != nil && h.Value.Required && header.Get(name) == "" {
			errs = append(errs, fmt.Errorf("required response header %q is missing from %s %d", name, op.OperationID, status))
		}
	}
	if len(r.Content) == 0 {
		if len(body) > 0 {
			errs = append(errs, fmt.Errorf("%s %d documents no body, yet one came", op.OperationID, status))
		}
		return errors.Join(errs...)
	}
	ct := header.Get("Content-Type")
	media := r.Content.Get(ct)
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return errors.Join(append(errs, fmt.Errorf("content type %q is not documented for %s %d", ct, op.OperationID, status))...)
	}
	var val any
	if err := json.Unmarshal(body, &val); err != nil {
		return errors.Join(append(errs, fmt.Errorf("body: %w", err))...)
	}
	if err := media.Schema.Value.VisitJSON(val, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		errs = append(errs, fmt.Errorf("%s %d: %w", op.OperationID, status, err))
	}
	if m, ok := val.(map[string]any); ok {
		if t, ok := m["type"].(string); ok {
			v.see("problem " + strings.TrimPrefix(t, ProblemTypeBase))
		}
	}
	return errors.Join(errs...)
}

// MissingWatch lists watchRun's documented statuses and the problem
// types only the events function answers that ValidateWatchResponse
// never saw (the stream's 200 is its own tests').
func (v *Validator) MissingWatch() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var missing []string
	if item := v.doc.Paths.Value(watchPath); item != nil && item.Get != nil {
		for code := range item.Get.Responses.Map() {
			if key := item.Get.OperationID + " " + code; code != "200" && !v.seen[key] {
				missing = append(missing, key)
			}
		}
	}
	for name, s := range v.doc.Components.Schemas {
		if s.Value == nil || !otherFunction(s.Value.Extensions) {
			continue
		}
		if c, ok := s.Value.Properties["type"].Value.Const.(string); ok && !v.seen["problem "+strings.TrimPrefix(c, ProblemTypeBase)] {
			missing = append(missing, "problem "+name)
		}
	}
	sort.Strings(missing)
	return missing
}

// ValidateEvent checks one event's data (GET /v1/runs/{runId}/events)
// against the document's schema for its type (RunEvent's discriminator
// mapping), and that the SSE event field names the same type.
func (v *Validator) ValidateEvent(eventType string, data []byte) error {
	root := v.doc.Components.Schemas["RunEvent"]
	if root == nil || root.Value == nil || root.Value.Discriminator == nil {
		return fmt.Errorf("the document has no RunEvent with a discriminator")
	}
	ref, ok := root.Value.Discriminator.Mapping[eventType]
	if !ok {
		return fmt.Errorf("event type %q is not in RunEvent's mapping", eventType)
	}
	name := ref.Ref
	if i := len("#/components/schemas/"); len(name) > i {
		name = name[i:]
	}
	s := v.doc.Components.Schemas[name]
	if s == nil || s.Value == nil {
		return fmt.Errorf("schema %s of %q is missing", name, eventType)
	}
	var val any
	if err := json.Unmarshal(data, &val); err != nil {
		return fmt.Errorf("event %s: data is not JSON: %w", eventType, err)
	}
	if m, ok := val.(map[string]any); !ok || m["type"] != eventType {
		return fmt.Errorf("event %s: data does not repeat its type", eventType)
	}
	if err := s.Value.VisitJSON(val); err != nil {
		return fmt.Errorf("event %s against %s: %w", eventType, name, err)
	}
	v.see("event " + eventType)
	return nil
}

// EventTypes are the types RunEvent maps, sorted as the document has them.
func (v *Validator) EventTypes() []string {
	root := v.doc.Components.Schemas["RunEvent"]
	if root == nil || root.Value == nil || root.Value.Discriminator == nil {
		return nil
	}
	var types []string
	for t := range root.Value.Discriminator.Mapping {
		types = append(types, t)
	}
	return types
}
