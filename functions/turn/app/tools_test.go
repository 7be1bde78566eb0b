package app_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/api/apitest"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/tools/runcode"
)

// TestToolCatalogThroughTheAPI, wired as main wires it, on a deployment
// without SEARCH_API_KEY: an install may list every tool the runtime has,
// web search included, and nothing else (the known names in the
// refusal); a turn goes on without web search and its run says so; and
// code runs only for an install that lists commonly_run_code.
func TestToolCatalogThroughTheAPI(t *testing.T) {
	s := newStackWith(t, map[string]string{"SEARCH_API_KEY": ""}, llmtest.Text("no search here"), llmtest.Text("no code here"))

	r := s.call(t, apiEvent("PUT", "/v1/installs/inst-1", "backend", true, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":["python"]}`, nil))
	if r.StatusCode != 400 || !strings.Contains(r.Body, `"field":"tools"`) {
		t.Fatalf("unknown tool: %d %s", r.StatusCode, r.Body)
	}
	for _, name := range []string{"commonly_run_code", "commonly_web_search", "commonly_post_message", "github_get_issue"} {
		if !strings.Contains(r.Body, name) {
			t.Errorf("the refusal does not list %s: %s", name, r.Body)
		}
	}

	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":["commonly_web_search","commonly_post_message"]}`)
	run := s.turn(t, "search, please")
	if run.Status != "succeeded" || !slices.Equal(run.UnavailableTools, []string{"commonly_web_search"}) {
		t.Fatalf("run %s %q, unavailable %v", run.Status, run.ErrorMessage, run.UnavailableTools)
	}
	if offered := s.llm.Requests()[0].Body.Tools; len(offered) != 1 || offered[0].Function.Name != "commonly_post_message" {
		t.Errorf("offered %+v", offered)
	}

	// Without a list: every built-in this deployment runs, but no code.
	if r := s.call(t, apiEvent("PUT", "/v1/installs/inst-2", "backend", true, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`, nil)); r.StatusCode != 201 {
		t.Fatalf("install: %d %s", r.StatusCode, r.Body)
	}
	if r := s.call(t, apiEvent("POST", "/v1/installs/inst-2/turns", "user-1", false, `{"message":"run print(1)"}`, map[string]string{"prefer": "wait=10"})); r.StatusCode != 200 {
		t.Fatalf("turn: %d %s", r.StatusCode, r.Body)
	}
	var offered []string
	for _, tool := range s.llm.Requests()[1].Body.Tools {
		offered = append(offered, tool.Function.Name)
	}
	if slices.Contains(offered, runcode.Name) || !slices.Contains(offered, "commonly_post_message") || slices.Contains(offered, "commonly_web_search") {
		t.Errorf("an install without a list was offered %v", offered)
	}
}

// TestTheDocumentNamesTheCatalog: the names api/openapi.yaml gives a
// frontend for tools and connectors are exactly those the runtime's
// catalog accepts (as a refusal lists them).
func TestTheDocumentNamesTheCatalog(t *testing.T) {
	s := newStack(t)
	schemas := apitest.Default(t).Document().Components.Schemas
	for _, c := range []struct{ field, body, schema string }{
		{"tools", `"tools":["?"]`, "ToolName"},
		{"connectors", `"connectors":["?"]`, "ConnectorName"},
	} {
		r := s.call(t, apiEvent("PUT", "/v1/installs/inst-1", "backend", true, `{"userId":"user-1","podId":"pod-1","agentName":"scout",`+c.body+`}`, nil))
		var p struct{ Field, Detail string }
		if err := json.Unmarshal([]byte(r.Body), &p); err != nil || r.StatusCode != 400 || p.Field != c.field {
			t.Fatalf("%s: %d %s", c.field, r.StatusCode, r.Body)
		}
		_, list, _ := strings.Cut(p.Detail, "the known ones are: ")
		var documented []string
		for _, v := range schemas[c.schema].Value.Enum {
			documented = append(documented, v.(string))
		}
		slices.Sort(documented)
		if known := strings.Split(list, ", "); !slices.Equal(known, documented) {
			t.Errorf("%s: the catalog knows %v, the document's %s lists %v", c.field, known, c.schema, documented)
		}
	}
}
