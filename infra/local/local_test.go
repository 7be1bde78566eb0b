package main

import "testing"

// make run names the offline model and the local sandbox when the real
// services are not configured (the function runs neither unless named),
// and leaves the modes alone when they are.
func TestLocalEnvNamesTheDemoModes(t *testing.T) {
	env := localEnv(func(string) string { return "" })
	if env["LLM_MODE"] != "offline" || env["SANDBOX"] != "local" {
		t.Errorf("without real services: LLM_MODE %q, SANDBOX %q", env["LLM_MODE"], env["SANDBOX"])
	}
	real := map[string]string{"LLM_BASE_URL": "https://litellm.example", "E2B_API_KEY": "e2b_k"}
	env = localEnv(func(k string) string { return real[k] })
	if env["LLM_MODE"] != "" || env["SANDBOX"] != "" {
		t.Errorf("with real services: LLM_MODE %q, SANDBOX %q", env["LLM_MODE"], env["SANDBOX"])
	}
}
