package llm

import (
	"encoding/json"
	"errors"
)

// chunk is the part of a chat.completion.chunk (reference §5) the
// assembly reads. openai-go sends the request and splits the event
// stream; each chunk's JSON is decoded into this small type with
// encoding/json instead of the SDK's ChatCompletionChunk, whose
// reflective decoder (apijson, gjson) allocated ~10 KB per chunk: most
// of what streaming added to a turn's memory (docs/benchmarks.md, "What
// streaming and run events cost").
type chunk struct {
	Model   string          `json:"model"`
	Choices []chunkChoice   `json:"choices"`
	Usage   json.RawMessage `json:"usage"`
}

type chunkChoice struct {
	Delta        chunkDelta `json:"delta"`
	FinishReason string     `json:"finish_reason"`
}

type chunkDelta struct {
	Content   string `json:"content"`
	Refusal   string `json:"refusal"`
	Reasoning string `json:"reasoning_content"`
	ToolCalls []struct {
		Index    int64  `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// UnmarshalJSON skips a field of an unexpected type, as the SDK's
// decoder does, rather than failing the stream: encoding/json fills the
// other fields and reports the first mismatch.
func (c *chunk) UnmarshalJSON(b []byte) error {
	type plain chunk
	err := json.Unmarshal(b, (*plain)(c))
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return nil
	}
	return err
}
