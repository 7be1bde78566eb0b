package app

import (
	"strings"
	"testing"
)

// Issue 9, item 3: the offline model and the local sandbox run only when
// asked for by name. A deployment that forgets LLM_BASE_URL or
// E2B_API_KEY refuses to start with an error naming the variable, instead
// of serving the offline model or trying bubblewrap in AWS.
func TestModesAreExplicit(t *testing.T) {
	base := map[string]string{"STATE_TABLE": "s", "RUNS_TABLE": "r", "AWS_LAMBDA_FUNCTION_NAME": "turn"}
	live := map[string]string{"LLM_BASE_URL": "https://litellm.internal", "LLM_API_KEY": "k", "E2B_API_KEY": "e2b_k", "STAGE": "dev"}
	env := func(sets ...map[string]string) func(string) string {
		m := map[string]string{}
		for _, set := range append([]map[string]string{base}, sets...) {
			for k, v := range set {
				m[k] = v
			}
		}
		return func(k string) string { return m[k] }
	}
	cases := []struct {
		name     string
		env      func(string) string
		errs     []string // each must be named; none means it starts
		llm, box string
	}{
		{"nothing configured", env(), []string{"LLM_BASE_URL", "E2B_API_KEY"}, "", ""},
		{"no LLM_BASE_URL", env(live, map[string]string{"LLM_BASE_URL": ""}), []string{"LLM_BASE_URL"}, "", ""},
		{"no E2B_API_KEY", env(live, map[string]string{"E2B_API_KEY": ""}), []string{"E2B_API_KEY"}, "", ""},
		{"live by default", env(live), nil, LLMLive, SandboxE2B},
		{"live by name", env(live, map[string]string{"LLM_MODE": "live", "SANDBOX": "e2b"}), nil, LLMLive, SandboxE2B},
		{"offline and local by name", env(map[string]string{"LLM_MODE": "offline", "SANDBOX": "local"}), nil, LLMOffline, SandboxLocal},
		{"offline model, E2B", env(live, map[string]string{"LLM_MODE": "offline", "LLM_BASE_URL": "", "LLM_API_KEY": ""}), nil, LLMOffline, SandboxE2B},
		{"unknown modes", env(live, map[string]string{"LLM_MODE": "mock", "SANDBOX": "docker"}), []string{"LLM_MODE", "SANDBOX"}, "", ""},
		{"offline with a live URL", env(live, map[string]string{"LLM_MODE": "offline"}), []string{"LLM_MODE=offline", "LLM_BASE_URL"}, "", ""},
		{"local with an E2B key", env(live, map[string]string{"SANDBOX": "local"}), []string{"SANDBOX=local", "E2B_API_KEY"}, "", ""},
		// Untagged sandboxes would escape the stage's reaper's list.
		{"E2B without a stage", env(live, map[string]string{"STAGE": ""}), []string{"STAGE"}, "", ""},
		{"local without a stage", env(map[string]string{"LLM_MODE": "offline", "SANDBOX": "local"}), nil, LLMOffline, SandboxLocal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := LoadConfig(c.env)
			if len(c.errs) == 0 {
				if err != nil || cfg.LLMMode != c.llm || cfg.Sandbox != c.box {
					t.Fatalf("modes %q %q, err %v; want %q %q", cfg.LLMMode, cfg.Sandbox, err, c.llm, c.box)
				}
				return
			}
			for _, want := range c.errs {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("err = %v, want it to name %s", err, want)
				}
			}
		})
	}
}
