package llm

import (
	"encoding/json"
	"testing"
)

// A chunk decodes the fields the assembly reads, and a field of an
// unexpected type is skipped, not a failed stream.
func TestChunkDecodes(t *testing.T) {
	for name, tc := range map[string]struct {
		raw       string
		content   string
		reasoning string
		usage     string
		args      string
	}{
		"text":       {raw: `{"id":"c","model":"m","choices":[{"index":0,"delta":{"content":"hi ","reasoning_content":"think"},"finish_reason":null}],"usage":null}`, content: "hi ", reasoning: "think", usage: "null"},
		"usage only": {raw: `{"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":1}}`, usage: `{"prompt_tokens":3,"completion_tokens":1}`},
		"tool args":  {raw: `{"model":"m","choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}`, args: `{"a"`},
		"mistyped":   {raw: `{"model":"m","created":"soon","choices":[{"index":"0","delta":{"content":"ok","refusal":false}}]}`, content: "ok"},
	} {
		t.Run(name, func(t *testing.T) {
			var c chunk
			if err := json.Unmarshal([]byte(tc.raw), &c); err != nil {
				t.Fatal(err)
			}
			if c.Model != "m" || string(c.Usage) != tc.usage {
				t.Errorf("model %q usage %s", c.Model, c.Usage)
			}
			var content, reasoning, args string
			if len(c.Choices) > 0 {
				d := c.Choices[0].Delta
				content, reasoning = d.Content, d.Reasoning
				if len(d.ToolCalls) > 0 {
					args = d.ToolCalls[0].Function.Arguments
				}
			}
			if content != tc.content || reasoning != tc.reasoning || args != tc.args {
				t.Errorf("content %q reasoning %q args %q", content, reasoning, args)
			}
		})
	}
	var c chunk
	if err := json.Unmarshal([]byte(`{"choices":[`), &c); err == nil {
		t.Error("a broken chunk decoded")
	}
}
