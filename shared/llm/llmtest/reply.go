package llmtest

import (
	"encoding/json"
	"net/http"
	"strconv"
)

// writeError answers with a string message.
func writeError(w http.ResponseWriter, status int, message, typ string) int {
	return writeErrorValue(w, status, message, typ)
}

// writeErrorValue answers in LiteLLM's error shape: code is the status as
// a string, type and param may be null, message may be an object.
func writeErrorValue(w http.ResponseWriter, status int, message any, typ string) int {
	d := apiErrorDetail{Message: message, Code: strconv.Itoa(status)}
	if typ != "" {
		d.Type = &typ
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{Error: d})
	return status
}

// encodeUsage renders u in its shape (reference §4).
func encodeUsage(u Usage) json.RawMessage {
	if u.Shape == NoUsage {
		return nil
	}
	m := map[string]any{
		"prompt_tokens":     u.Prompt,
		"completion_tokens": u.Completion,
		"total_tokens":      u.Prompt + u.Completion,
		"completion_tokens_details": map[string]any{
			"reasoning_tokens": u.Reasoning,
		},
	}
	switch u.Shape {
	case OpenAIShape:
		m["prompt_tokens_details"] = map[string]any{"cached_tokens": u.Cached}
	case DeepSeekShape, NullDetailsShape:
		m["prompt_cache_hit_tokens"] = u.Cached
		m["prompt_cache_miss_tokens"] = u.Prompt - u.Cached
		if u.Shape == NullDetailsShape {
			m["prompt_tokens_details"] = nil
		}
	}
	b, _ := json.Marshal(m)
	return b
}

// costUSD prices u at deepseek-v4-flash's flat V4 rates (reference §8),
// for the x-litellm-response-cost header.
func costUSD(u Usage) float64 {
	const hit, miss, out = 0.0028, 0.14, 0.28
	return (float64(u.Cached)*hit + float64(u.Prompt-u.Cached)*miss + float64(u.Completion)*out) / 1e6
}
