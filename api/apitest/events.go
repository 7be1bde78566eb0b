package apitest

import (
	"encoding/json"
	"fmt"

	"github.com/getkin/kin-openapi/openapi3"
)

// OtherFunction reports an operation served by a function other than
// the turn function (x-function: the events function's stream), which
// the turn handler neither routes nor tests.
func OtherFunction(op *openapi3.Operation) bool {
	f, ok := op.Extensions["x-function"]
	return ok && f != "turn"
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
