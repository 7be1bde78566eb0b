package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/internal/dynamodblocal"
)

// turnOrder is the order the turn's event files tell a story in: an
// install, its owner's plan, a migration, a turn (dispatched to the
// function itself and run), its usage, its runs; files not listed run after these,
// by name.
var turnOrder = []string{"put-install.json", "set-plan.json", "migration.json", "submit-turn.json", "get-run.json", "dispatch.json", "usage.json", "my-runs.json", "user-runs.json", "no-auth.json"}

// expect checks an event file's response; files without one must answer
// without a function error.
type expect func(t *testing.T, r response)

func status(want int) expect {
	return func(t *testing.T, r response) {
		t.Helper()
		var out struct {
			StatusCode int    `json:"statusCode"`
			Body       string `json:"body"`
		}
		if err := json.Unmarshal(r.Body, &out); err != nil || out.StatusCode != want {
			t.Errorf("status %d, want %d: %s", out.StatusCode, want, r.Body)
		}
	}
}

func listsOneSucceededRun(t *testing.T, r response) {
	t.Helper()
	status(200)(t, r)
	if strings.Count(string(r.Body), `\"runId\"`) != 1 || !strings.Contains(string(r.Body), `\"status\":\"succeeded\"`) {
		t.Errorf("the runs after one turn: %s", r.Body)
	}
}

var expectations = map[string]expect{
	"turn/put-install.json": status(201),
	"turn/set-plan.json":    status(200),
	// The install runs on native already, so a migration to native is
	// refused on its field.
	"turn/migration.json": func(t *testing.T, r response) {
		status(400)(t, r)
		if !strings.Contains(string(r.Body), `\"field\":\"to\"`) {
			t.Errorf("migration to the engine in effect: %s", r.Body)
		}
	},
	"turn/submit-turn.json": func(t *testing.T, r response) {
		status(202)(t, r)
		// The dispatch went to the Lambda stand-in, which ran it as the
		// function's next invocation: the turn ran to its end.
		if len(r.Async) != 1 || r.Async[0].FunctionError {
			t.Fatalf("asynchronous dispatches: %+v", r.Async)
		}
		var d struct{ RunID, Status string }
		if err := json.Unmarshal(r.Async[0].Body, &d); err != nil || !strings.HasPrefix(d.RunID, "run_") || d.Status != "succeeded" {
			t.Errorf("dispatch answered %s", r.Async[0].Body)
		}
	},
	// The file's run id is not the one this session created.
	"turn/get-run.json": status(404),
	// A dispatch of a run the store does not have fails, so Lambda retries
	// it and then sends it to the on-failure queue.
	"turn/dispatch.json": func(t *testing.T, r response) {
		if !r.FunctionError || !strings.Contains(string(r.Body), "not found") {
			t.Errorf("dispatch of an unknown run: %s", r.Body)
		}
	},
	"turn/usage.json": func(t *testing.T, r response) {
		status(200)(t, r)
		if !strings.Contains(string(r.Body), `\"turnsUsed\":1`) || !strings.Contains(string(r.Body), `\"plan\":\"pro\"`) {
			t.Errorf("usage after one turn on the pro plan: %s", r.Body)
		}
	},
	// The session's one run, listed to its owner and to the service.
	"turn/my-runs.json":   listsOneSucceededRun,
	"turn/user-runs.json": listsOneSucceededRun,
	"turn/no-auth.json":   status(401),
	// One sweep with the template's environment and local.env.json's
	// SANDBOX=local: the state table and the runs read, nothing to do.
	"reaper/scheduled.json": func(t *testing.T, r response) {
		var res struct {
			Killed, SourceFailures *int
		}
		if r.FunctionError || json.Unmarshal(r.Body, &res) != nil || res.Killed == nil || res.SourceFailures == nil || *res.SourceFailures != 0 {
			t.Errorf("sweep: %s", r.Body)
		}
	},
}

// TestEveryEventFileFromTheTemplate is `make invoke`'s path for every
// event file under functions/*/testdata: each function of the synthesized
// template runs under the emulator with its environment from the template
// (and infra/invoke/local.env.json), and the files of the function its
// asset was built from are invoked through it. `make test` synthesizes
// the template first and sets CDK_TEMPLATE and RIE_BIN.
func TestEveryEventFileFromTheTemplate(t *testing.T) {
	tpl, rie, root := templateAndEmulator(t)
	tmpl, err := loadTemplate(tpl, dynamodblocal.Region)
	if err != nil {
		t.Fatal(err)
	}
	if got := tmpl.functions(); !slices.Equal(got, []string{"AlarmFunction", "EventsFunction", "ReaperFunction", "TurnFunction"}) {
		t.Fatalf("functions in the template: %v", got)
	}
	all, _ := filepath.Glob(filepath.Join(root, "functions", "*", "testdata", "*.json"))
	invoked := map[string]bool{}
	for _, id := range tmpl.functions() {
		t.Run(id, func(t *testing.T) {
			if id == "EventsFunction" {
				// A function URL in RESPONSE_STREAM mode that discovers its
				// issuer's keys (OIDC) at a cold start: no issuer answers
				// here, and the emulator does not stream. Its handler runs
				// for real in functions/events/handler's tests and behind
				// the local gateway (infra/local).
				t.Skip("the events function needs its OIDC issuer at a cold start; see functions/events/handler")
			}
			var logs bytes.Buffer
			ctx := context.Background()
			s, err := start(ctx, config{
				Template: tpl, Function: id, EnvFile: filepath.Join(root, "infra", "invoke", "local.env.json"),
				RIE: rie, BinDir: filepath.Join(root, "bin"), EventsFile: filepath.Join(t.TempDir(), "events.jsonl"), Logs: &logs,
			})
			if err != nil {
				t.Fatal(err)
			}
			defer func() {
				s.close()
				if t.Failed() {
					t.Logf("function output:\n%s", logs.String())
				}
			}()
			fn, ok := strings.CutPrefix(s.pkg, module+"functions/")
			if !ok {
				t.Fatalf("%s's asset is built from %s, not a function of this repository", id, s.pkg)
			}
			files, _ := filepath.Glob(filepath.Join(root, "functions", fn, "testdata", "*.json"))
			if len(files) == 0 {
				t.Fatalf("functions/%s/testdata has no event file", fn)
			}
			slices.SortStableFunc(files, func(a, b string) int { return rank(a) - rank(b) })
			for _, f := range files {
				payload, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				key := fn + "/" + filepath.Base(f)
				invoked[f] = true
				r, err := s.invoke(ctx, payload)
				if err != nil {
					t.Fatalf("%s: %v", key, err)
				}
				if check, ok := expectations[key]; ok {
					t.Run(filepath.Base(f), func(t *testing.T) { check(t, r) })
					continue
				}
				if r.FunctionError {
					t.Errorf("%s: function error %s", key, r.Body)
				}
				for _, a := range r.Async {
					if a.FunctionError {
						t.Errorf("%s: asynchronous invocation failed: %s", key, a.Body)
					}
				}
			}
		})
	}
	for _, f := range all {
		if !invoked[f] {
			t.Errorf("%s was not invoked: no function in the template is built from its directory", f)
		}
	}
}

// rank orders the turn's story first, then everything else by name.
func rank(path string) int {
	if i := slices.Index(turnOrder, filepath.Base(path)); i >= 0 {
		return i
	}
	return len(turnOrder)
}

// Issue 35: make invoke's session on its happy path, as docs/local.md
// walks it: an install, a turn (its dispatch run through the same
// bootstrap, its answer posted to the local pod backend), the alarm fed
// the session's own runs stream (EVENT=stream), the usage then counting
// the turn's cost. No line says ERROR or failed; each invoke exits 0.
func TestSessionHappyPath(t *testing.T) {
	dynamodblocal.EmbeddedOnly(t, "a session keeps its runs stream between invokes from the embedded server's own change feed (StreamRecords)")
	tpl, rie, root := templateAndEmulator(t)
	dir := t.TempDir()
	invoke := func(fn, event string) string {
		t.Helper()
		if event != StreamEvent {
			event = filepath.Join(root, "functions", event)
		}
		var logs, out bytes.Buffer
		err := run(context.Background(), config{
			Template: tpl, Function: fn, EnvFile: filepath.Join(root, "infra", "invoke", "local.env.json"),
			RIE: rie, BinDir: filepath.Join(root, "bin"), Logs: &logs, SessionDir: dir,
		}, event, "", &out)
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, "ERROR") || strings.Contains(strings.ReplaceAll(line, `"failed":0`, ""), "failed") {
				t.Errorf("%s %s printed %q", fn, filepath.Base(event), line)
			}
		}
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", fn, event, err, logs.String())
		}
		return out.String()
	}
	invoke("TurnFunction", "turn/testdata/put-install.json")
	if out := invoke("TurnFunction", "turn/testdata/submit-turn.json"); !strings.Contains(out, `\"status\":\"queued\"`) {
		t.Fatalf("submit: %s", out)
	}
	if out := invoke("AlarmFunction", StreamEvent); !strings.Contains(out, `"batchItemFailures":[]`) {
		t.Fatalf("the alarm on the session's stream: %s", out)
	}
	var usage struct{ Body string }
	var u struct {
		TurnsUsed  int   `json:"turnsUsed"`
		CostMicros int64 `json:"costMicros"`
	}
	out := invoke("TurnFunction", "turn/testdata/usage.json")
	if json.Unmarshal([]byte(out), &usage) != nil || json.Unmarshal([]byte(usage.Body), &u) != nil || u.TurnsUsed != 1 || u.CostMicros <= 0 {
		t.Errorf("usage after the session's turn and its alarm: %s", out)
	}
	if recs, err := pendingStream(dir); err != nil || len(recs) != 0 {
		t.Errorf("records still pending after the alarm took them: %d %v", len(recs), err)
	}
}

// templateAndEmulator are the synthesized template and the emulator
// `make test` names (CDK_TEMPLATE, RIE_BIN; t is skipped without them),
// and the repository's root.
func templateAndEmulator(t *testing.T) (tpl, rie, root string) {
	t.Helper()
	tpl, rie = os.Getenv("CDK_TEMPLATE"), os.Getenv("RIE_BIN")
	if tpl == "" || rie == "" {
		t.Skip("CDK_TEMPLATE and RIE_BIN are set by `make test` (after `make synth`)")
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return tpl, rie, root
}
