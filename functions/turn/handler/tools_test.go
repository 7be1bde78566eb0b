package handler_test

import (
	"strings"
	"testing"
)

// TestUnknownToolsAreRefused: an install may list only the tools and
// connectors the runtime has; anything else is a 400 invalid_field whose
// detail lists the known names, and nothing is stored.
func TestUnknownToolsAreRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.install(t, "inst-1", "user-1", map[string]any{"tools": []string{"commonly_run_code", "commonly_web_search"}})
	cases := []struct {
		name  string
		extra map[string]any
		field string
		known string
	}{
		{"a tool", map[string]any{"tools": []string{"commonly_post_message", "web_search"}}, "tools", strings.Join(knownTools, ", ")},
		{"a tool in another case", map[string]any{"tools": []string{"COMMONLY_RUN_CODE"}}, "tools", strings.Join(knownTools, ", ")},
		{"a connector", map[string]any{"connectors": []string{"jira"}}, "connectors", "github"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := map[string]any{"userId": "user-1", "podId": "pod-1", "agentName": "helper"}
			for k, v := range c.extra {
				body[k] = v
			}
			p := checkProblem(t, e.do(t, withBody(event(t, "put-install.json"), body)), 400, "invalid_field")
			if p.Field != c.field || !strings.HasSuffix(p.Detail, "the known ones are: "+c.known) {
				t.Errorf("field %q, detail %q", p.Field, p.Detail)
			}
		})
	}
	in, err := e.st.GetInstall(t.Context(), "inst-1")
	if err != nil || strings.Join(*in.Tools, ",") != "commonly_run_code,commonly_web_search" || in.Connectors != nil {
		t.Errorf("a refused update changed the install: %+v %v", in, err)
	}
}
