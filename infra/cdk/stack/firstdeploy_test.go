package stack

import (
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// Issue 23: a stage without the Durable Object runtime's settings or an
// alarm address says so before it deploys: an error in production, a
// warning (from the app and on the stack) elsewhere; a URL without its
// token's secret, or the other way round, is an error in any stage.
func TestFirstDeploySettings(t *testing.T) {
	withDO := func(s Settings) Settings {
		s.Environment = map[string]map[string]string{TurnFunctionID: {"DO_RUNTIME_URL": "https://do.example.com"}}
		s.Secrets = map[string]string{"DO_RUNTIME_TOKEN": ""}
		return s
	}
	for _, c := range []struct {
		name     string
		s        Settings
		errs     []string
		warnings []string
	}{
		{"dev without either", devSettings(), nil, []string{"DO_RUNTIME_URL (and secrets.DO_RUNTIME_TOKEN) is not set", "alarmEmail is not set"}},
		{"prod complete", prodSettings(), nil, nil},
		{"prod without either", func() Settings {
			s := prodSettings()
			s.AlarmEmail, s.Environment, s.Secrets = "", nil, nil
			return s
		}(), []string{"DO_RUNTIME_URL (and secrets.DO_RUNTIME_TOKEN) is not set: every turn of an install on the durable-object engine will answer 503 fallback_unconfigured (required in a production stage)",
			"alarmEmail is not set: SpendAlarmRaised and the operational alarms reach an ops topic nobody is subscribed to (required in a production stage)"}, nil},
		{"dev complete", func() Settings { s := withDO(devSettings()); s.AlarmEmail = "a@example.com"; return s }(), nil, nil},
		{"a URL without its token", func() Settings { s := withDO(devSettings()); s.Secrets = nil; return s }(), []string{"secrets.DO_RUNTIME_TOKEN is not listed"}, []string{"alarmEmail"}},
		{"a token without its URL", func() Settings { s := withDO(devSettings()); s.Environment = nil; return s }(), []string{"secrets.DO_RUNTIME_TOKEN is listed but"}, []string{"alarmEmail"}},
		{"an http URL", func() Settings {
			s := withDO(prodSettings())
			s.Environment[TurnFunctionID]["DO_RUNTIME_URL"] = "http://do.example.com"
			return s
		}(), []string{"is not an https URL"}, nil},
	} {
		err := c.s.withDefaults().validate()
		for _, want := range c.errs {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: err %v, want it to say %q", c.name, err, want)
			}
		}
		if len(c.errs) == 0 && err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		w := c.s.Warnings()
		if len(w) != len(c.warnings) {
			t.Errorf("%s: warnings %q, want %d", c.name, w, len(c.warnings))
			continue
		}
		for i, want := range c.warnings {
			if !strings.Contains(w[i], want) {
				t.Errorf("%s: warning %q, want it to say %q", c.name, w[i], want)
			}
		}
	}
}

// The dev stack carries its warnings, which cdk synth, diff and deploy
// print; the prod stack none.
func TestStackWarnsBeforeDeploy(t *testing.T) {
	dev := assertions.Annotations_FromStack(synth(t, devSettings()).Stack.Stack)
	for _, want := range []string{"*alarmEmail is not set*", "*DO_RUNTIME_URL*fallback_unconfigured*"} {
		dev.HasWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(strings.ReplaceAll(want, "*", ".*"))))
	}
	prod := assertions.Annotations_FromStack(synth(t, prodSettings()).Stack.Stack)
	prod.HasNoWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String(".*(alarmEmail|DO_RUNTIME_URL).*")))
}

// Issue 23: the stack outputs what the docs tell operators to take from
// it: the ops topic and each secret's ARN (a created secret's by
// reference, an existing one's as given).
func TestOperatorOutputs(t *testing.T) {
	x := synth(t, prodSettings())
	outs, _ := x.json["Outputs"].(map[string]any)
	value := func(id string) any {
		t.Helper()
		o, ok := outs[id].(map[string]any)
		if !ok {
			t.Fatalf("no output %s among %v", id, sortedKeys(outs))
		}
		if d, _ := o["Description"].(string); d == "" {
			t.Errorf("output %s has no description", id)
		}
		return o["Value"]
	}
	equal(t, "OpsTopicArn", value("OpsTopicArn"), ref(x.id(x.Events.OpsTopic)))
	equal(t, "LlmApiKeySecretArn", value("LlmApiKeySecretArn"), ref(x.id(x.Secrets.byName["LLM_API_KEY"])))
	equal(t, "E2bApiKeySecretArn", value("E2bApiKeySecretArn"), ref(x.id(x.Secrets.byName["E2B_API_KEY"])))
	equal(t, "BrokerTokenSecretArn", value("BrokerTokenSecretArn"), "arn:aws:secretsmanager:us-east-1:123456789012:secret:broker-AbCdEf")
	equal(t, "DoRuntimeTokenSecretArn", value("DoRuntimeTokenSecretArn"), "arn:aws:secretsmanager:us-east-1:123456789012:secret:do-runtime-AbCdEf")
	if _, ok := outs["SearchApiKeySecretArn"]; ok {
		t.Error("an output for a secret the stage does not have")
	}
}
