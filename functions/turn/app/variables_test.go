package app

import (
	"slices"
	"testing"
)

// TestLoadConfigReadsOnlyVariables drives LoadConfig through a recording
// getenv, with nothing set, with every variable set, and with each mode
// switched, and checks that every name it asked for is in Variables: the
// list the CDK stack is checked against.
func TestLoadConfigReadsOnlyVariables(t *testing.T) {
	if !slices.IsSorted(Variables) || len(slices.Compact(slices.Clone(Variables))) != len(Variables) {
		t.Fatalf("Variables must be sorted and unique: %v", Variables)
	}
	full := map[string]string{}
	for _, v := range Variables {
		full[v] = "x"
	}
	for k, v := range map[string]string{
		"TURN_DISPATCH": "lambda", "HOSTED_ENGINE": "native", "PLAN_TURN_LIMITS": "free=30,pro=200",
		"INSTALL_CACHE_TTL": "30s", "LLM_TIMEOUT": "45s", "TURN_MAX_USD": "0.25", "DO_RUNTIME_TIMEOUT": "60s",
		"DAILY_SPEND_CAP_USD": "2.00", "LLM_MODE": "live", "SANDBOX": "e2b", "SEARCH_PROVIDER": "exa",
		"DO_RUNTIME_URL": "https://do.example", "LLM_BASE_URL": "https://llm.example", "BROKER_URL": "https://broker.example",
		"COMMONLY_API_URL": "https://api.example", "SEARCH_API_URL": "https://search.example", "GITHUB_API_URL": "https://gh.example",
		"E2B_API_URL": "https://api.e2b.example", "E2B_SANDBOX_URL": "https://sandbox.e2b.example",
	} {
		full[k] = v
	}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	envs := []map[string]string{
		{},
		full,
		with(full, "TURN_DISPATCH", "inline", "LLM_MODE", "offline", "SANDBOX", "local", "SEARCH_PROVIDER", "tavily"),
		with(full, "LLM_BASE_URL", "", "E2B_API_KEY", "", "DO_RUNTIME_URL", "", "BROKER_URL", ""),
	}
	read := map[string]bool{}
	for _, env := range envs {
		_, _ = LoadConfig(func(name string) string {
			read[name] = true
			return env[name]
		})
	}
	for name := range read {
		if !slices.Contains(Variables, name) {
			t.Errorf("LoadConfig reads %s, which is not in Variables (the CDK stack would not declare it)", name)
		}
	}
	if len(read) == 0 {
		t.Fatal("nothing read: the recording getenv is not reached")
	}
}
