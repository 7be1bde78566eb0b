package handler_test

import (
	"net/http/httptest"
	"testing"

	"github.com/commonly/runtime/shared/engine/durableobject/dotest"
)

// Issue 23: GET of an install shows the engine it is configured for
// (engine) beside the one serving its turns now (engineInEffect), through
// a migration and its rollback; only the service reads installs.
func TestGetInstallShowsTheEngineInEffect(t *testing.T) {
	srv := httptest.NewServer(dotest.New("do-secret-token"))
	defer srv.Close()
	e := newEnv(t, envOpts{doURL: srv.URL})
	e.install(t, "inst-do", "user-1", map[string]any{"engine": "durable-object"})
	get := func() map[string]any {
		t.Helper()
		r := e.do(t, withParam(event(t, "get-install.json"), "installId", "inst-do"))
		if r.StatusCode != 200 {
			t.Fatalf("GET install: %d %s", r.StatusCode, r.Body)
		}
		return decode[map[string]any](t, r.Body)
	}
	if in := get(); in["engine"] != "durable-object" || in["engineInEffect"] != "durable-object" || in["userId"] != "user-1" {
		t.Errorf("before a migration: %v", in)
	}
	for _, step := range []struct{ state, inEffect string }{
		{"in-progress", "durable-object"}, {"done", "native"}, {"rolled-back", "durable-object"},
	} {
		ev := withBody(withParam(event(t, "migration.json"), "installId", "inst-do"), map[string]string{"to": "native", "state": step.state})
		if r := e.do(t, ev); r.StatusCode != 200 {
			t.Fatalf("migration %s: %d %s", step.state, r.StatusCode, r.Body)
		}
		in := get()
		m, _ := in["migration"].(map[string]any)
		if in["engine"] != "durable-object" || in["engineInEffect"] != step.inEffect || m["state"] != step.state {
			t.Errorf("%s: engine %v, engineInEffect %v, migration %v; want engineInEffect %s", step.state, in["engine"], in["engineInEffect"], m, step.inEffect)
		}
	}
	checkProblem(t, e.do(t, asUser(t, withParam(event(t, "get-install.json"), "installId", "inst-do"), "user-1")), 403, "forbidden")
	checkProblem(t, e.do(t, withParam(event(t, "get-install.json"), "installId", "nope")), 404, "not_found")
}
