package offline

// cacheBlock is DeepSeek's context-cache granularity in tokens.
const cacheBlock = 64

// estimateTokens approximates a tokenizer: about 4 characters a token,
// rounded up (an empty text is no token).
func estimateTokens(text string) int64 {
	return int64(len(text)+3) / 4
}

// cachedTokens is the part of prompt that repeats the previous prompt's
// prefix, in tokens rounded down to whole cache blocks, like a prefix cache.
func cachedTokens(prev, prompt string) int64 {
	n := min(len(prev), len(prompt))
	i := 0
	for i < n && prev[i] == prompt[i] {
		i++
	}
	return int64(i) / 4 / cacheBlock * cacheBlock
}

// usage is the DeepSeek usage shape (reference §4).
type usage struct {
	PromptTokens          int64 `json:"prompt_tokens"`
	CompletionTokens      int64 `json:"completion_tokens"`
	TotalTokens           int64 `json:"total_tokens"`
	PromptCacheHitTokens  int64 `json:"prompt_cache_hit_tokens"`
	PromptCacheMissTokens int64 `json:"prompt_cache_miss_tokens"`
}

func newUsage(prompt, cached, completion int64) usage {
	cached = min(cached, prompt)
	return usage{
		PromptTokens:          prompt,
		CompletionTokens:      completion,
		TotalTokens:           prompt + completion,
		PromptCacheHitTokens:  cached,
		PromptCacheMissTokens: prompt - cached,
	}
}
