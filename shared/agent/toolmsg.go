package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// The tool message is a JSON object with "ok" first in meaning: the model
// reads {"ok":true,...output} or {"ok":false,"error":"..."}.

// okContent encodes a tool's output for the model. An object's fields
// are merged beside "ok" (which the output cannot override); any other
// value goes under "result".
func okContent(output any) (string, error) {
	if output == nil {
		return `{"ok":true}`, nil
	}
	raw, err := marshal(output)
	if err != nil {
		return "", fmt.Errorf("encode tool output: %w", err)
	}
	fields := map[string]json.RawMessage{}
	if raw[0] != '{' || json.Unmarshal(raw, &fields) != nil {
		fields = map[string]json.RawMessage{"result": raw}
	}
	fields["ok"] = json.RawMessage("true")
	out, err := marshal(fields)
	if err != nil {
		return "", fmt.Errorf("encode tool output: %w", err)
	}
	return string(out), nil
}

// errContent reports a failed or refused call to the model.
func errContent(msg string) string {
	out, err := marshal(struct {
		OK    bool   `json:"ok"`
		Error string `json:"error"`
	}{false, msg})
	if err != nil { // a struct of a bool and a string always encodes
		panic(err)
	}
	return string(out)
}

// marshal encodes without HTML escaping: the reader is a model, and code
// output full of \u003c is harder for it to read.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
