package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	alarmapp "github.com/commonly/runtime/functions/alarm/app"
	eventsapp "github.com/commonly/runtime/functions/events/app"
	reaperapp "github.com/commonly/runtime/functions/reaper/app"
	turnapp "github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/infra/lambdamem"
	"github.com/commonly/runtime/shared/gomaxprocs"
	"github.com/commonly/runtime/shared/secrets"
	"github.com/commonly/runtime/shared/tracing"
)

// lambdaReserved are variables Lambda sets itself and a template cannot
// declare; a function may read them.
var lambdaReserved = []string{"_HANDLER", "_X_AMZN_TRACE_ID", "AWS_DEFAULT_REGION", "AWS_REGION", "AWS_EXECUTION_ENV",
	"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_VERSION", "AWS_LAMBDA_INITIALIZATION_TYPE",
	"AWS_LAMBDA_LOG_GROUP_NAME", "AWS_LAMBDA_LOG_STREAM_NAME", "AWS_ACCESS_KEY", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY",
	"AWS_SESSION_TOKEN", "AWS_LAMBDA_RUNTIME_API", "LAMBDA_TASK_ROOT", "LAMBDA_RUNTIME_DIR"}

type fnCase struct {
	id, dir        string
	fn             func(x *synthesized) *function
	timeout        float64
	reads          []string // the function's config package's Variables
	alsoReads      []string // read outside the config package (main)
	reservedInProd float64
}

var fnCases = []fnCase{
	{TurnFunctionID, "turn", func(x *synthesized) *function { return x.Turn.function }, 180, turnapp.Variables, append([]string{gomaxprocs.Env}, tracing.Variables...), 200},
	{AlarmFunctionID, "alarm", func(x *synthesized) *function { return x.Alarm.function }, 60, alarmapp.Variables, tracing.Variables, 5},
	{ReaperFunctionID, "reaper", func(x *synthesized) *function { return x.Reaper.function }, 55, reaperapp.Variables, tracing.Variables, 1},
	{EventsFunctionID, "events", func(x *synthesized) *function { return x.RunEvents.function }, 900, eventsapp.Variables, tracing.Variables, 50},
}

func TestFunctions(t *testing.T) {
	// Each function's memory is infra/lambdamem's, the size the scale
	// model prices; every function it names is one the stack builds.
	sizes, err := lambdamem.Load()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range fnCases {
		ids = append(ids, c.id)
	}
	slices.Sort(ids)
	equal(t, "functions sized in infra/lambdamem", sizes.IDs(), ids)
	for _, s := range []Settings{devSettings(), prodSettings()} {
		x := synth(t, s)
		if n := len(x.ofType("AWS::Lambda::Function")); n != len(fnCases) {
			t.Errorf("%d functions, want %d", n, len(fnCases))
		}
		for _, c := range fnCases {
			f := c.fn(x)
			logical := x.id(f.Function)
			r := x.resource(t, logical)
			p := r["Properties"].(map[string]any)
			if path, _ := r["Metadata"].(map[string]any)["aws:cdk:path"].(string); filepath.Base(filepath.Dir(path)) != c.id {
				t.Errorf("%s: construct path %s does not end in %s/Resource", c.id, path, c.id)
			}
			equal(t, c.id+" runtime", []any{p["Runtime"], p["Handler"], p["Architectures"]}, []any{"provided.al2023", "bootstrap", []any{"arm64"}})
			memory, _ := sizes.MB(c.id)
			equal(t, c.id+" memory, timeout", []any{p["MemorySize"], p["Timeout"]}, []any{float64(memory), c.timeout})
			equal(t, c.id+" role", p["Role"], getAtt(x.id(f.Role), "Arn"))
			equal(t, c.id+" logging", p["LoggingConfig"], map[string]any{
				"LogFormat": "JSON", "ApplicationLogLevel": "INFO", "SystemLogLevel": "WARN", "LogGroup": ref(x.id(f.LogGroup)),
			})
			lg := x.resource(t, x.id(f.LogGroup))
			equal(t, c.id+" log retention", lg["Properties"].(map[string]any)["RetentionInDays"], s.LogRetentionDays)
			wantPolicy := "Delete"
			if s.Production {
				wantPolicy = "Retain"
			}
			equal(t, c.id+" log group policy", lg["DeletionPolicy"], wantPolicy)
			switch {
			case s.Production:
				equal(t, c.id+" reserved concurrency", p["ReservedConcurrentExecutions"], c.reservedInProd)
			case c.id == EventsFunctionID:
				// Bounded in every stage: no API Gateway in front of it.
				equal(t, c.id+" reserved concurrency in dev", p["ReservedConcurrentExecutions"], 10.0)
			default:
				if _, ok := p["ReservedConcurrentExecutions"]; ok {
					t.Errorf("%s reserves concurrency in dev", c.id)
				}
			}
			if _, named := p["FunctionName"]; named {
				t.Errorf("%s has a physical name", c.id)
			}
			// The code is the function's own bootstrap.
			asset, _ := r["Metadata"].(map[string]any)["aws:asset:path"].(string)
			if asset == "" {
				t.Errorf("%s: no asset metadata", c.id)
				continue
			}
			outdir := *x.Node().Root().(awscdk.App).Outdir()
			body, err := os.ReadFile(filepath.Join(outdir, asset, "bootstrap"))
			if err != nil || string(body) != "bootstrap of "+c.dir {
				t.Errorf("%s: asset %s holds %q, want the %s bootstrap (%v)", c.id, asset, body, c.dir, err)
			}
		}
	}
}

// TestEnvironmentDeclaresWhatEachFunctionReads compares each function's
// declared variables with its config package's Variables: the same
// names (each secret X also as X_SECRET_ARN, and not the ones Lambda
// sets), so `sam local invoke --env-vars` can set any of them; and the
// values they have in AWS.
func TestEnvironmentDeclaresWhatEachFunctionReads(t *testing.T) {
	for _, s := range []Settings{devSettings(), prodSettings()} {
		x := synth(t, s)
		state, runs := ref(x.id(x.Data.State)), ref(x.id(x.Data.Runs))
		secretRef := func(name string) any {
			if arn := s.Secrets[name]; arn != "" {
				return arn
			}
			if _, ok := s.Secrets[name]; ok {
				return ref(x.id(x.Secrets.byName[name]))
			}
			return ""
		}
		explicit := map[string]map[string]any{
			TurnFunctionID: {
				"STAGE": s.Stage, "STATE_TABLE": state, "RUNS_TABLE": runs, "TURN_DISPATCH": "lambda",
				"LLM_MODE": "live", "SANDBOX": "e2b", "GOMAXPROCS": "1", "SANDBOX_MAX_CONCURRENT": "90",
			},
			AlarmFunctionID:  {"STATE_TABLE": state, "EVENT_BUS_NAME": ref(x.id(x.Events.Bus))},
			ReaperFunctionID: {"STAGE": s.Stage, "STATE_TABLE": state, "RUNS_TABLE": runs, "SANDBOX": "e2b", "TURN_FUNCTION_NAME": ref(x.id(x.Turn.Function))},
			EventsFunctionID: {"STATE_TABLE": state, "RUNS_TABLE": runs, "JWT_ISSUER": s.JWTIssuer, "JWT_AUDIENCE": "commonly-turns"},
		}
		// Every function sends its spans to X-Ray, keeping the stage's
		// share of what did not fail.
		for _, id := range FunctionIDs {
			explicit[id][tracing.EnvXRay] = "true"
			explicit[id][tracing.EnvSampleRatio] = strconv.FormatFloat(s.Tracing.ratio(), 'f', -1, 64)
		}
		for _, c := range fnCases {
			vars := x.props(t, x.id(c.fn(x).Function))["Environment"].(map[string]any)["Variables"].(map[string]any)
			var want []string
			for _, v := range append(slices.Clone(c.reads), c.alsoReads...) {
				if slices.Contains(lambdaReserved, v) {
					continue
				}
				want = append(want, v)
				if slices.Contains(secrets.Names, v) {
					want = append(want, secrets.ARNVar(v))
				}
			}
			slices.Sort(want)
			equal(t, s.Stage+" "+c.id+" declared variables (vs its Variables)", sortedKeys(vars), want)

			for name, got := range vars {
				var wantValue any = ""
				switch {
				case slices.Contains(secrets.Names, name):
					wantValue = "" // never a plain secret in AWS
				case explicit[c.id][name] != nil:
					wantValue = explicit[c.id][name]
				case len(name) > len(secrets.ARNSuffix) && slices.Contains(secrets.Names, name[:len(name)-len(secrets.ARNSuffix)]):
					wantValue = secretRef(name[:len(name)-len(secrets.ARNSuffix)])
				case s.Environment[c.id][name] != "":
					wantValue = s.Environment[c.id][name]
				}
				equal(t, s.Stage+" "+c.id+" "+name, got, wantValue)
			}
		}
	}
}
