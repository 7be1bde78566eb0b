package stack

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// assets is a directory with a stand-in bootstrap per function, each
// naming its function, so a test can tell which asset a function got.
var assets = sync.OnceValue(func() string {
	dir, err := os.MkdirTemp("", "cdk-assets-")
	if err != nil {
		panic(err)
	}
	for _, fn := range []string{"turn", "alarm", "reaper", "events"} {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			panic(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("bootstrap of "+fn), 0o755); err != nil {
			panic(err)
		}
	}
	return dir
})

func TestMain(m *testing.M) {
	code := m.Run()
	_ = os.RemoveAll(assets())
	jsii.Close()
	os.Exit(code)
}

// devSettings are a dev stage's, as cdk.json has them but for the assets.
func devSettings() Settings {
	return Settings{
		Stage: "dev", AssetDir: assets(),
		JWTIssuer: "https://auth.commonly.dev", JWTAudience: []string{"commonly-turns"},
		CORSOrigins: []string{"https://dev.commonly.dev"}, ThrottleRate: 20, ThrottleBurst: 40, LogRetentionDays: 14,
		ReservedConcurrency: map[string]int{EventsFunctionID: 10},
		Secrets:             map[string]string{"LLM_API_KEY": "", "E2B_API_KEY": ""},
		Environment:         map[string]map[string]string{TurnFunctionID: {"LLM_BASE_URL": "https://litellm.dev.commonly.dev"}},
	}
}

// prodSettings differ where production does.
func prodSettings() Settings {
	s := devSettings()
	s.Stage, s.Production, s.LogRetentionDays = "prod", true, 90
	share := 0.1
	s.Tracing.SampleRatio = &share
	s.ReservedConcurrency = map[string]int{TurnFunctionID: 200, AlarmFunctionID: 5, ReaperFunctionID: 1, EventsFunctionID: 50}
	s.Secrets = map[string]string{
		"LLM_API_KEY": "", "E2B_API_KEY": "",
		"BROKER_TOKEN":     "arn:aws:secretsmanager:us-east-1:123456789012:secret:broker-AbCdEf",
		"DO_RUNTIME_TOKEN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:do-runtime-AbCdEf",
	}
	// What a production stage requires (firstdeploy.go).
	s.AlarmEmail = "ops@example.com"
	s.Environment = map[string]map[string]string{TurnFunctionID: {"LLM_BASE_URL": "https://litellm.commonly.dev", "DO_RUNTIME_URL": "https://do.example.com"}}
	return s
}

// synthesized is a stack and its template.
type synthesized struct {
	*Stack
	tpl  assertions.Template
	json map[string]any
}

var (
	synthMu sync.Mutex
	synths  = map[string]*synthesized{}
)

// synth builds, nag-checks and synthesizes a stage's stack once per test
// process (synthesis takes seconds).
func synth(t *testing.T, s Settings) *synthesized {
	t.Helper()
	synthMu.Lock()
	defer synthMu.Unlock()
	if got, ok := synths[s.Stage]; ok {
		return got
	}
	// The metadata the CDK CLI asks for, which `make invoke` reads, and
	// cdk.json's feature flags, so the tests check what `cdk deploy` makes.
	ctx := featureFlags(t)
	ctx["aws:cdk:enable-path-metadata"], ctx["aws:cdk:enable-asset-metadata"] = true, true
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx})
	st, err := New(app, s)
	if err != nil {
		t.Fatal(err)
	}
	Check(app)
	tpl := assertions.Template_FromStack(st.Stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	out := &synthesized{Stack: st, tpl: tpl}
	if err := json.Unmarshal(raw, &out.json); err != nil {
		t.Fatal(err)
	}
	synths[s.Stage] = out
	return out
}

// id is a construct's logical id.
func (x *synthesized) id(c constructs.IConstruct) string {
	if child := c.Node().DefaultChild(); child != nil {
		c = child
	}
	return *x.Stack.Stack.GetLogicalId(c.(awscdk.CfnElement))
}

// resource is a resource of the template by logical id.
func (x *synthesized) resource(t *testing.T, logical string) map[string]any {
	t.Helper()
	r, ok := x.json["Resources"].(map[string]any)[logical].(map[string]any)
	if !ok {
		t.Fatalf("no resource %s", logical)
	}
	return r
}

// props are a resource's properties.
func (x *synthesized) props(t *testing.T, logical string) map[string]any {
	t.Helper()
	p, _ := x.resource(t, logical)["Properties"].(map[string]any)
	return p
}

// ofType are the resources of a type, by logical id.
func (x *synthesized) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range x.json["Resources"].(map[string]any) {
		if m := r.(map[string]any); m["Type"] == typ {
			out[id] = m
		}
	}
	return out
}

// ref and getAtt are the template's intrinsics, for comparisons.
func ref(logical string) map[string]any { return map[string]any{"Ref": logical} }
func getAtt(logical, attr string) map[string]any {
	return map[string]any{"Fn::GetAtt": []any{logical, attr}}
}

// equal compares after a JSON round trip, so Go literals and template
// values meet as the same types.
func equal(t *testing.T, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(norm(got), norm(want)) {
		g, _ := json.MarshalIndent(got, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

func norm(v any) any {
	raw, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		panic(err)
	}
	return out
}

// has runs an assertions matcher, which throws (a panic in Go) on a miss.
func has(t *testing.T, x *synthesized, typ string, props any) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%s %v: %v", typ, props, p)
		}
	}()
	x.tpl.HasResourceProperties(jsii.String(typ), props)
}

// keys are a map's keys, sorted.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// render flattens an Fn::Join of strings and intrinsics into one string,
// a Ref shown as ${Logical} and a GetAtt as ${Logical.Attr} (so a JSON
// document stays JSON), for checks on generated documents.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any:
		if j, ok := x["Fn::Join"].([]any); ok {
			parts := j[1].([]any)
			var b strings.Builder
			for i, p := range parts {
				if i > 0 {
					b.WriteString(j[0].(string))
				}
				b.WriteString(render(p))
			}
			return b.String()
		}
		if r, ok := x["Ref"].(string); ok {
			return "${" + r + "}"
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok {
			return fmt.Sprintf("${%v.%v}", ga[0], ga[1])
		}
	}
	raw, _ := json.Marshal(v)
	return string(raw)
}

// featureFlags are the feature flags of cdk.json at the repository's root
// (its context keys that start with "@").
func featureFlags(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	flags := map[string]any{}
	for k, v := range doc.Context {
		if strings.HasPrefix(k, "@") {
			flags[k] = v
		}
	}
	if len(flags) == 0 {
		t.Fatal("cdk.json sets no feature flags")
	}
	return flags
}
