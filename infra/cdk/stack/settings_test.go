package stack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"

	eventsapp "github.com/commonly/runtime/functions/events/app"
)

// TestCDKJSONStages loads every stage of the repository's cdk.json and
// builds its stack, so a typo there fails here and not at deploy time.
func TestCDKJSONStages(t *testing.T) {
	raw, err := os.ReadFile("../../../cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var cdk struct {
		App     string `json:"app"`
		Context struct {
			Stage  string         `json:"stage"`
			Stages map[string]any `json:"stages"`
		} `json:"context"`
	}
	if err := json.Unmarshal(raw, &cdk); err != nil {
		t.Fatal(err)
	}
	if cdk.Context.Stage != "dev" || !strings.Contains(cdk.App, "infra/cdk") {
		t.Errorf("cdk.json: default stage %q, app %q", cdk.Context.Stage, cdk.App)
	}
	for stage := range cdk.Context.Stages {
		s, err := LoadSettings(stage, cdk.Context.Stages, "/repo")
		if err != nil {
			t.Errorf("stage %s: %v", stage, err)
			continue
		}
		if s.AssetDir != filepath.Join("/repo", "bin", "arm64") || s.Architecture != ARM64 {
			t.Errorf("stage %s: assets %s (%s)", stage, s.AssetDir, s.Architecture)
		}
		if s.Production != (stage == "prod") {
			t.Errorf("stage %s: production %v", stage, s.Production)
		}
		s.AssetDir = assets()
		if _, err := New(awscdk.NewApp(nil), s); err != nil {
			t.Errorf("stage %s: %v", stage, err)
		}
	}
}

func TestSettingsRefuseMistakes(t *testing.T) {
	stages := map[string]any{"dev": map[string]any{
		"assetDir": "bin/arm64", "jwtIssuer": "https://auth.example", "jwtAudience": []string{"a"}, "corsOrigins": []string{"https://app.example"},
		"reservedConcurrency": map[string]int{"EventsFunction": 1},
	}}
	for _, c := range []struct {
		name  string
		stage string
		edit  func(m map[string]any)
		want  []string
	}{
		{"unknown stage", "qa", nil, []string{`stage "qa" is not in the context's stages (dev)`}},
		{"unknown field", "dev", func(m map[string]any) { m["jwtIssuers"] = "x" }, []string{`unknown field "jwtIssuers"`}},
		{"every problem at once", "dev", func(m map[string]any) {
			m["architecture"] = "mips"
			m["jwtIssuer"] = "http://auth.example"
			m["corsOrigins"] = []string{"*"}
			m["reservedConcurrency"] = map[string]int{"Turn": 5}
			m["environment"] = map[string]any{"Reaper": map[string]string{}}
			m["logRetentionDays"] = 10
			m["streamsPerUser"] = 99
		}, []string{`architecture "mips"`, "jwtIssuer", "corsOrigins: * is not allowed", "reservedConcurrency: Turn=5", "environment: Reaper is not a function", "logRetentionDays 10",
			"reservedConcurrency: EventsFunction is required", "streamsPerUser 99"}},
	} {
		st := map[string]any{}
		for k, v := range stages["dev"].(map[string]any) {
			st[k] = v
		}
		if c.edit != nil {
			c.edit(st)
		}
		_, err := LoadSettings(c.stage, map[string]any{"dev": st}, "/repo")
		for _, w := range c.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("%s: err = %v, want %q", c.name, err, w)
			}
		}
	}
}

func TestStackRefusesMistakes(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(s *Settings)
		want string
	}{
		{"undeclared variable", func(s *Settings) { s.Environment = map[string]map[string]string{TurnFunctionID: {"LLM_BASEURL": "x"}} },
			"environment.TurnFunction.LLM_BASEURL: TurnFunction does not read it"},
		{"a secret as a plain value", func(s *Settings) {
			s.Environment = map[string]map[string]string{TurnFunctionID: {"LLM_API_KEY": "sk-x"}}
		},
			"environment.TurnFunction.LLM_API_KEY: set by the stack"},
		{"a table name", func(s *Settings) {
			s.Environment = map[string]map[string]string{ReaperFunctionID: {"STATE_TABLE": "t"}}
		},
			"environment.ReaperFunction.STATE_TABLE: set by the stack"},
		{"an unknown secret", func(s *Settings) { s.Secrets = map[string]string{"OPENAI_KEY": ""} }, "secrets.OPENAI_KEY: not a secret variable"},
		{"a missing bootstrap", func(s *Settings) { s.AssetDir = t.TempDir() }, "turn/bootstrap is missing: run `make build LAMBDA_GOARCH=arm64`"},
	} {
		s := devSettings()
		s.Stage = "refuse"
		c.edit(&s)
		_, err := New(awscdk.NewApp(nil), s)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
}

// The stage's bound on streamsPerUser is the events function's.
func TestStreamsPerUserBoundIsTheFunctions(t *testing.T) {
	if maxStreamsPerUser != eventsapp.MaxStreamsPerUser {
		t.Errorf("stack %d, function %d", maxStreamsPerUser, eventsapp.MaxStreamsPerUser)
	}
}
