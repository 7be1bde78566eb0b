package turns_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/turns"
)

// TestInstallToolsAreKnown: an install may list only the names of the
// tool catalog (configured in this deployment or not), and enable only
// its connectors; a refusal lists the known names.
func TestInstallToolsAreKnown(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	req := turns.InstallRequest{UserID: "user-1", PodID: "pod-1", AgentName: "helper",
		Tools: &[]string{"commonly_web_search", "github_get_issue", "commonly_run_code"}, Connectors: &[]string{"github"}}
	if in, _, err := r.svc.PutInstall(ctx, admin, "inst-1", req); err != nil || len(*in.Tools) != 3 {
		t.Fatalf("known names: %+v, %v", in, err)
	}
	req.Tools = &[]string{"commonly_run_code", "python"}
	_, _, err := r.svc.PutInstall(ctx, admin, "inst-1", req)
	inv, ok := errors.AsType[*turns.InvalidError](err)
	if !ok || inv.Field != "tools" || !strings.Contains(inv.Reason, `"python"`) || !strings.Contains(inv.Reason, strings.Join(knownTools, ", ")) {
		t.Errorf("unknown tool: %v", err)
	}
	req.Tools, req.Connectors = nil, &[]string{"linear"}
	_, _, err = r.svc.PutInstall(ctx, admin, "inst-1", req)
	if inv, ok := errors.AsType[*turns.InvalidError](err); !ok || inv.Field != "connectors" || !strings.Contains(inv.Reason, "github") {
		t.Errorf("unknown connector: %v", err)
	}
	stored, err := r.st.GetInstall(ctx, "inst-1")
	if err != nil || !slices.Equal(*stored.Tools, []string{"commonly_web_search", "github_get_issue", "commonly_run_code"}) {
		t.Errorf("a refused update changed the install: %+v, %v", stored, err)
	}
}

func TestPutInstall(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	req := turns.InstallRequest{UserID: "user-1", PodID: "pod-1", AgentName: "helper"}
	in, created, err := r.svc.PutInstall(ctx, admin, "inst-1", req)
	if err != nil || !created || in.Engine != turns.Native || in.InstanceID != "inst-1" || in.Tools != nil {
		t.Fatalf("create: %+v created %v, %v", in, created, err)
	}
	none := []string{}
	req.Tools, req.Model = &none, ptr("deepseek-v4-pro")
	in, created, err = r.svc.PutInstall(ctx, admin, "inst-1", req)
	if err != nil || created || in.Tools == nil || len(*in.Tools) != 0 || in.Model != "deepseek-v4-pro" {
		t.Fatalf("update: %+v created %v, %v", in, created, err)
	}
	stored, _, err := r.st.GetInstallAndPlan(ctx, "inst-1", "user-1")
	if err != nil || stored.Tools == nil || len(*stored.Tools) != 0 {
		t.Errorf("no tools must survive the store: %+v, %v", stored, err)
	}

	for _, c := range []struct {
		name  string
		c     turns.Caller
		id    string
		mod   func(*turns.InstallRequest)
		want  error
		field string
	}{
		{"a user", user, "inst-2", nil, turns.ErrForbidden, ""},
		{"no identity", turns.Caller{}, "inst-2", nil, turns.ErrUnauthenticated, ""},
		{"bad install id", admin, "a#b", nil, turns.ErrInvalid, "installId"},
		{"no pod", admin, "inst-2", func(q *turns.InstallRequest) { q.PodID = "" }, turns.ErrInvalid, "podId"},
		{"another owner", admin, "inst-1", func(q *turns.InstallRequest) { q.UserID = "user-2" }, turns.ErrInvalid, "userId"},
		{"bad engine", admin, "inst-2", func(q *turns.InstallRequest) { q.Engine = ptr("lambda") }, turns.ErrInvalid, "engine"},
		{"bad tool name", admin, "inst-2", func(q *turns.InstallRequest) { q.Tools = &[]string{"a b"} }, turns.ErrInvalid, "tools"},
		{"too many tools", admin, "inst-2", func(q *turns.InstallRequest) { q.Tools = ptr(make([]string, turns.MaxToolsListed+1)) }, turns.ErrInvalid, "tools"},
		{"an unknown tool", admin, "inst-2", func(q *turns.InstallRequest) { q.Tools = &[]string{"commonly_run_code", "web_search"} }, turns.ErrInvalid, "tools"},
		{"a tool in another case", admin, "inst-2", func(q *turns.InstallRequest) { q.Tools = &[]string{"Commonly_Run_Code"} }, turns.ErrInvalid, "tools"},
		{"an unknown connector", admin, "inst-2", func(q *turns.InstallRequest) { q.Connectors = &[]string{"github", "jira"} }, turns.ErrInvalid, "connectors"},
		{"long prompt", admin, "inst-2", func(q *turns.InstallRequest) {
			q.SystemPrompt = ptr(strings.Repeat("é", turns.MaxSystemPromptChars+1))
		}, turns.ErrInvalid, "systemPrompt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := turns.InstallRequest{UserID: "user-1", PodID: "pod-1", AgentName: "helper"}
			if c.mod != nil {
				c.mod(&q)
			}
			_, _, err := r.svc.PutInstall(ctx, c.c, c.id, q)
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if inv, ok := errors.AsType[*turns.InvalidError](err); c.field != "" && (!ok || inv.Field != c.field) {
				t.Errorf("field of %v, want %s", err, c.field)
			}
		})
	}
}

// While a migration is in progress the engine being left serves; done
// switches; rolled back returns to the origin, even after done.
func TestMigrate(t *testing.T) {
	r := newRig(t, rigOpts{fallback: true})
	r.install(t, "inst-1", "user-1", turns.InstallRequest{Engine: ptr("durable-object")})
	ctx := context.Background()
	for _, step := range []struct {
		state string
		want  turns.EngineName
	}{
		{"in-progress", turns.DurableObject}, {"done", turns.Native}, {"rolled-back", turns.DurableObject},
	} {
		in, err := r.svc.Migrate(ctx, admin, "inst-1", turns.MigrationRequest{To: "native", State: step.state})
		if err != nil {
			t.Fatalf("%s: %v", step.state, err)
		}
		if got := r.svc.EffectiveEngine(in); got != step.want {
			t.Errorf("%s: engine in effect %s, want %s", step.state, got, step.want)
		}
	}
	for _, c := range []struct {
		name string
		c    turns.Caller
		id   string
		req  turns.MigrationRequest
		want error
	}{
		{"a user", user, "inst-1", turns.MigrationRequest{To: "native", State: "done"}, turns.ErrForbidden},
		{"bad target", admin, "inst-1", turns.MigrationRequest{To: "lambda", State: "done"}, turns.ErrInvalid},
		{"bad state", admin, "inst-1", turns.MigrationRequest{To: "native", State: "paused"}, turns.ErrInvalid},
		{"unknown install", admin, "nope", turns.MigrationRequest{To: "native", State: "done"}, turns.ErrNotFound},
		{"already there", admin, "inst-1", turns.MigrationRequest{To: "durable-object", State: "in-progress"}, turns.ErrInvalid},
	} {
		if _, err := r.svc.Migrate(ctx, c.c, c.id, c.req); !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

// Issue 23: "done" and "rolled-back" to the engine an install already
// runs are refused as "in-progress" is, and leave the install as it was;
// the same move's later states are still accepted.
func TestMigrationToTheEngineInEffectIsRefused(t *testing.T) {
	r := newRig(t, rigOpts{fallback: true})
	r.install(t, "inst-do", "user-1", turns.InstallRequest{Engine: ptr("durable-object")})
	r.install(t, "inst-native", "user-1", turns.InstallRequest{})
	ctx := context.Background()
	for _, c := range []struct{ id, to string }{{"inst-do", "durable-object"}, {"inst-native", "native"}} {
		for _, state := range []string{"in-progress", "done", "rolled-back"} {
			if _, err := r.svc.Migrate(ctx, admin, c.id, turns.MigrationRequest{To: c.to, State: state}); !errors.Is(err, turns.ErrInvalid) {
				t.Errorf("%s: %s to %s: err = %v, want it refused", c.id, state, c.to, err)
			}
		}
		in, err := r.st.GetInstall(ctx, c.id)
		if err != nil || in.Migration != nil {
			t.Errorf("%s after the refusals: migration %+v, %v", c.id, in.Migration, err)
		}
	}
	// A move done, then the same state again and its rollback: still the
	// same move, accepted.
	for _, state := range []string{"done", "done", "rolled-back"} {
		if _, err := r.svc.Migrate(ctx, admin, "inst-do", turns.MigrationRequest{To: "native", State: state}); err != nil {
			t.Errorf("%s of the move to native: %v", state, err)
		}
	}
}

func TestSetPlan(t *testing.T) {
	r := newRig(t, rigOpts{})
	ctx := context.Background()
	if p, err := r.svc.SetPlan(ctx, admin, "user-1", "pro"); err != nil || p != turns.PlanPro {
		t.Fatalf("set: %v %v", p, err)
	}
	if u := r.usage(t, user); u.Plan != turns.PlanPro || u.TurnsLimit != 200 {
		t.Errorf("usage = %+v", u)
	}
	if _, err := r.svc.SetPlan(ctx, user, "user-1", "pro"); !errors.Is(err, turns.ErrForbidden) {
		t.Errorf("a user setting plans: %v", err)
	}
	if _, err := r.svc.SetPlan(ctx, admin, "user-1", "gold"); !errors.Is(err, turns.ErrInvalid) {
		t.Errorf("unknown plan: %v", err)
	}
	if _, err := r.svc.SetPlan(ctx, admin, "a#b", "pro"); !errors.Is(err, turns.ErrInvalid) {
		t.Errorf("bad user id: %v", err)
	}
}
