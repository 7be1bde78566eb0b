package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
)

// MaxRecordedArgs caps the arguments stored on a run's tool call: they
// are kept to explain the run, not to replay it.
const MaxRecordedArgs = 2000

var errNotObject = errors.New("arguments must be a JSON object")

// parseArgs checks the model's arguments string. An empty string is the
// empty object (models send it for tools without parameters); anything
// else must be one JSON object. Nothing is guessed or repaired: an
// invalid call is reported to the model, which can correct it.
func parseArgs(s string) (json.RawMessage, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), nil
	}
	var raw json.RawMessage
	if err := json.Unmarshal([]byte(s), &raw); err != nil {
		return nil, err
	}
	if s[0] != '{' {
		return nil, errNotObject
	}
	return json.RawMessage(s), nil
}

// normalizeArgs is the form in which two calls' arguments compare equal:
// valid JSON re-encoded compactly with sorted keys (numbers kept as
// written), anything else as the trimmed text.
func normalizeArgs(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return "{}"
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return s
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return s
	}
	return strings.TrimSuffix(buf.String(), "\n")
}
