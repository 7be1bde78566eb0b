package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/store"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	base := map[string]string{"STAGE": "dev", "STATE_TABLE": "state", "RUNS_TABLE": "runs", "E2B_API_KEY": "e2b_k"}
	with := func(kv ...string) func(string) string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return env(m)
	}
	c, err := LoadConfig(with())
	want := Config{Stage: "dev", Tables: store.Tables{State: "state", Runs: "runs"}, Sandbox: SandboxE2B, Lifetime: 180 * time.Second,
		E2BAPIKey: "e2b_k", E2BDomain: "e2b.app"}
	if err != nil || c != want {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	for _, ok := range []struct {
		v    string
		want time.Duration
	}{{"180", 180 * time.Second}, {"5m", 5 * time.Minute}, {" 24h ", 24 * time.Hour}} {
		if c, err := LoadConfig(with("SANDBOX_LIFETIME", ok.v)); err != nil || c.Lifetime != ok.want {
			t.Errorf("SANDBOX_LIFETIME=%q: %v, %v", ok.v, c.Lifetime, err)
		}
	}
	c, err = LoadConfig(with("SANDBOX", "local", "E2B_API_KEY", ""))
	if err != nil || c.Sandbox != SandboxLocal {
		t.Errorf("local: %+v, %v", c, err)
	}
	bad := []struct {
		env  func(string) string
		want []string
	}{
		{env(nil), []string{"STAGE", "STATE_TABLE", "RUNS_TABLE", "E2B_API_KEY"}},
		{with("E2B_API_KEY", ""), []string{"E2B_API_KEY is required"}},
		{with("SANDBOX", "local"), []string{"SANDBOX=local", "E2B_API_KEY"}},
		{with("SANDBOX", "docker"), []string{"SANDBOX"}},
		// Below the turn's lifetime it would kill running turns' sandboxes.
		{with("SANDBOX_LIFETIME", "179s"), []string{"SANDBOX_LIFETIME", "below"}},
		{with("SANDBOX_LIFETIME", "25h"), []string{"SANDBOX_LIFETIME"}},
		{with("SANDBOX_LIFETIME", "soon"), []string{"SANDBOX_LIFETIME"}},
		{with("E2B_API_URL", "ftp://e2b"), []string{"E2B_API_URL"}},
	}
	for _, b := range bad {
		_, err := LoadConfig(b.env)
		for _, w := range b.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("err = %v, want it to name %s", err, w)
			}
		}
	}
	if _, err := LoadConfig(env(nil)); err != nil && strings.Contains(err.Error(), "e2b_k") {
		t.Error("an error carries the key")
	}
}

// Variables lists exactly the variables LoadConfig reads, sorted: the
// CDK stack declares these on the function.
func TestVariablesAreTheOnesRead(t *testing.T) {
	if !slices.IsSorted(Variables) {
		t.Errorf("not sorted: %v", Variables)
	}
	var read []string
	_, _ = LoadConfig(func(k string) string { read = append(read, k); return "" })
	slices.Sort(read)
	if !slices.Equal(slices.Compact(read), Variables) {
		t.Errorf("read %v, declared %v", read, Variables)
	}
}
