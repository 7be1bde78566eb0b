package llm

import "testing"

// Raw shapes the fake does not produce: both fields at once, nulls inside
// the details, nonsense values.
func TestParseUsage(t *testing.T) {
	cases := []struct {
		raw  string
		want Usage
	}{
		{`{"prompt_tokens":1200,"completion_tokens":80,"prompt_tokens_details":{"cached_tokens":512},"prompt_cache_hit_tokens":1024}`,
			Usage{1200, 1024, 80}},
		{`{"prompt_tokens":1200,"completion_tokens":80,"prompt_tokens_details":{"cached_tokens":1024},"prompt_cache_hit_tokens":0}`,
			Usage{1200, 1024, 80}},
		{`{"prompt_tokens":1200,"completion_tokens":80,"prompt_tokens_details":{"cached_tokens":null}}`,
			Usage{1200, 0, 80}},
		{`{"prompt_tokens":null,"completion_tokens":null,"prompt_tokens_details":null,"prompt_cache_hit_tokens":null}`,
			Usage{}},
		{`{"prompt_tokens":100,"completion_tokens":-3,"prompt_cache_hit_tokens":640}`,
			Usage{100, 100, 0}},
		{`{"prompt_tokens":"many"}`, Usage{}},
		{``, Usage{}},
		{`null`, Usage{}},
	}
	for _, c := range cases {
		if got := parseUsage(c.raw); got != c.want {
			t.Errorf("parseUsage(%s) = %+v, want %+v", c.raw, got, c.want)
		}
	}
}

func TestErrorBodyRefusal(t *testing.T) {
	cases := []struct {
		status int
		body   string
		want   bool
	}{
		{400, `{"error":{"message":{"error":"Violated guardrail policy"},"type":"None","param":"None","code":"400"}}`, true},
		{400, `{"error":{"message":"Invalid request","type":"content_policy_violation","code":400}}`, true},
		{400, `{"error":{"message":"x","type":null,"code":"content_filter"}}`, true},
		{400, `{"error":"Prompt Injection attempt detected"}`, true},
		{400, `{"detail":{"error":"Moderation flagged the input"}}`, true},
		{400, `{"error":{"message":"litellm.ContextWindowExceededError","type":null,"code":"400"}}`, false},
		{429, `{"error":{"message":"guardrail rate limit","code":"429"}}`, false},
		{503, `{"error":{"message":"guardrail unavailable","code":"503"}}`, false},
		{400, `<html>guardrail</html>`, false},
		{400, ``, false},
	}
	for _, c := range cases {
		if got := isRefusal(c.status, parseErrorBody([]byte(c.body))); got != c.want {
			t.Errorf("isRefusal(%d, %s) = %v, want %v", c.status, c.body, got, c.want)
		}
	}
}
