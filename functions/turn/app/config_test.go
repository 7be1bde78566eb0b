package app

import (
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/engine/durableobject"
	"github.com/commonly/runtime/shared/turns"
)

func TestLoadConfig(t *testing.T) {
	base := map[string]string{"STATE_TABLE": "s", "RUNS_TABLE": "r", "AWS_LAMBDA_FUNCTION_NAME": "turn", "LLM_MODE": "offline", "SANDBOX": "local"}
	with := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return func(k string) string { return m[k] }
	}
	cfg, err := LoadConfig(with())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dispatch != DispatchLambda || cfg.DefaultEngine != turns.Native || cfg.TurnMaxUSD != 250_000 ||
		cfg.LLMModel != "deepseek-v4-flash" || cfg.LLMTimeout != 45*time.Second || cfg.InstallCacheTTL != 30*time.Second || cfg.Limits.For("pro") != 200 ||
		cfg.DORuntimeTimeout != durableobject.DefaultTimeout {
		t.Errorf("defaults: %+v", cfg)
	}
	if cfg.SpendCap != 0 {
		t.Errorf("a spend cap by default: %d", cfg.SpendCap)
	}
	if capped, err := LoadConfig(with("DAILY_SPEND_CAP_USD", "2.50")); err != nil || capped.SpendCap != 2_500_000 {
		t.Errorf("DAILY_SPEND_CAP_USD=2.50: %d, %v", capped.SpendCap, err)
	}
	if cfg.MaxSandboxes != 0 {
		t.Errorf("a sandbox cap by default: %d", cfg.MaxSandboxes)
	}
	if capped, err := LoadConfig(with("SANDBOX_MAX_CONCURRENT", "90")); err != nil || capped.MaxSandboxes != 90 {
		t.Errorf("SANDBOX_MAX_CONCURRENT=90: %d, %v", capped.MaxSandboxes, err)
	}
	bad := []struct {
		env  []string
		want string
	}{
		{[]string{"STATE_TABLE", ""}, "STATE_TABLE"},
		{[]string{"HOSTED_ENGINE", "workers"}, "HOSTED_ENGINE"},
		{[]string{"PLAN_TURN_LIMITS", "free=30"}, "PLAN_TURN_LIMITS"},
		{[]string{"TURN_DISPATCH", "queue"}, "TURN_DISPATCH"},
		{[]string{"AWS_LAMBDA_FUNCTION_NAME", ""}, "AWS_LAMBDA_FUNCTION_NAME"},
		{[]string{"TURN_MAX_USD", "-1"}, "TURN_MAX_USD"},
		{[]string{"DAILY_SPEND_CAP_USD", "0"}, "DAILY_SPEND_CAP_USD"},
		{[]string{"DAILY_SPEND_CAP_USD", "two"}, "DAILY_SPEND_CAP_USD"},
		{[]string{"DAILY_SPEND_CAP_USD", "0.0000001"}, "DAILY_SPEND_CAP_USD"},
		{[]string{"LLM_TIMEOUT", "soon"}, "LLM_TIMEOUT"},
		{[]string{"LLM_MODE", "live", "LLM_BASE_URL", "https://litellm.internal"}, "LLM_API_KEY"},
		{[]string{"DO_RUNTIME_TIMEOUT", "10m"}, "DO_RUNTIME_TIMEOUT"},
		{[]string{"DO_RUNTIME_URL", "ftp://do"}, "DO_RUNTIME_URL"},
		{[]string{"DO_RUNTIME_URL", "https://do.example"}, "DO_RUNTIME_TOKEN"},
		{[]string{"SEARCH_PROVIDER", "bing"}, "SEARCH_PROVIDER"},
		{[]string{"SANDBOX_MAX_CONCURRENT", "-1"}, "SANDBOX_MAX_CONCURRENT"},
		{[]string{"SANDBOX_MAX_CONCURRENT", "lots"}, "SANDBOX_MAX_CONCURRENT"},
	}
	for _, c := range bad {
		_, err := LoadConfig(with(c.env...))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want mention of %s", c.env, err, c.want)
		}
	}
	if cfg.LLMMode != LLMOffline || cfg.Sandbox != SandboxLocal || cfg.PodTools || cfg.WebSearch || cfg.GitHub || cfg.Fallback {
		t.Errorf("features with nothing configured: %+v", cfg)
	}
	cfg, err = LoadConfig(with("STAGE", "dev", "LLM_MODE", "live", "SANDBOX", "e2b", "LLM_BASE_URL", "https://litellm.internal", "LLM_API_KEY", "k", "E2B_API_KEY", "e2b_k",
		"BROKER_URL", "https://broker", "BROKER_TOKEN", "t", "SEARCH_API_KEY", "s", "DO_RUNTIME_URL", "https://do", "DO_RUNTIME_TOKEN", "t"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LLMMode != LLMLive || cfg.Sandbox != SandboxE2B || cfg.PodTools || !cfg.WebSearch || !cfg.GitHub || !cfg.Fallback {
		t.Errorf("features: %+v", cfg)
	}
	if cfg, _ = LoadConfig(with("BROKER_URL", "https://broker", "COMMONLY_API_URL", "https://commonly")); !cfg.PodTools {
		t.Error("pod tools off with both COMMONLY_API_URL and BROKER_URL")
	}

	// The URL problems come in one order, start after start.
	urls := with("LLM_MODE", "live", "SANDBOX", "local", "DO_RUNTIME_URL", "a", "DO_RUNTIME_TOKEN", "t", "LLM_BASE_URL", "b", "LLM_API_KEY", "k", "BROKER_URL", "c",
		"COMMONLY_API_URL", "d", "SEARCH_API_URL", "e", "GITHUB_API_URL", "f", "E2B_API_URL", "g", "E2B_SANDBOX_URL", "h")
	_, first := LoadConfig(urls)
	for range 20 {
		if _, err := LoadConfig(urls); err == nil || first == nil || err.Error() != first.Error() {
			t.Fatalf("joined errors changed between starts:\n%v\n%v", first, err)
		}
	}
	if first == nil || strings.Index(first.Error(), "DO_RUNTIME_URL") > strings.Index(first.Error(), "E2B_SANDBOX_URL") {
		t.Errorf("URL errors out of order: %v", first)
	}

	// Every problem is reported at once.
	_, err = LoadConfig(with("STATE_TABLE", "", "RUNS_TABLE", "", "HOSTED_ENGINE", "x"))
	for _, want := range []string{"STATE_TABLE", "RUNS_TABLE", "HOSTED_ENGINE"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("joined error misses %s: %v", want, err)
		}
	}
}
