package llm

import "encoding/json"

// wireUsage holds both usage shapes. Pointers read missing and null alike
// as nil: LiteLLM may send prompt_tokens_details: null for DeepSeek
// (LiteLLM #16009).
type wireUsage struct {
	PromptTokens        *int64 `json:"prompt_tokens"`
	CompletionTokens    *int64 `json:"completion_tokens"`
	PromptTokensDetails *struct {
		CachedTokens *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
	PromptCacheHitTokens *int64 `json:"prompt_cache_hit_tokens"`
}

// parseUsage normalises the raw usage object (OpenAI or DeepSeek shape):
// cached = max(prompt_tokens_details.cached_tokens, prompt_cache_hit_tokens),
// missing or null = 0. completion_tokens already includes reasoning tokens.
func parseUsage(raw string) Usage {
	var w wireUsage
	if raw == "" || json.Unmarshal([]byte(raw), &w) != nil {
		return Usage{}
	}
	u := Usage{
		PromptTokens:     nonNegative(w.PromptTokens),
		CompletionTokens: nonNegative(w.CompletionTokens),
	}
	if w.PromptTokensDetails != nil {
		u.CachedPromptTokens = nonNegative(w.PromptTokensDetails.CachedTokens)
	}
	u.CachedPromptTokens = max(u.CachedPromptTokens, nonNegative(w.PromptCacheHitTokens))
	// Cached tokens are a part of the prompt; never let the uncached part,
	// which is priced from the difference, go negative.
	u.CachedPromptTokens = min(u.CachedPromptTokens, u.PromptTokens)
	return u
}

func nonNegative(p *int64) int64 {
	if p == nil || *p < 0 {
		return 0
	}
	return *p
}
