package stack

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
)

// The Durable Object runtime's settings in a stage: the turn function's
// URL variable and its token's secret.
const (
	doRuntimeURL   = "DO_RUNTIME_URL"
	doRuntimeToken = "DO_RUNTIME_TOKEN"
)

// doRuntimeURLOf is the stage's DO_RUNTIME_URL ("" when unset).
func (s *Settings) doRuntimeURLOf() string { return s.Environment[TurnFunctionID][doRuntimeURL] }

// firstDeployProblems are the settings a first deploy would miss, said
// before the first fallback turn or the first alarm would: required in a
// production stage (errors), warned about in any other (warnings).
//   - No DO_RUNTIME_URL: every turn of an install on, or migrated to, the
//     durable-object engine answers 503 fallback_unconfigured.
//   - No alarmEmail: SpendAlarmRaised and the operational alarms reach an
//     ops topic without a subscriber.
//
// A DO_RUNTIME_URL without secrets.DO_RUNTIME_TOKEN, or the token without
// the URL, is an error in every stage: the turn function refuses to start
// with the one and not the other.
func (s *Settings) firstDeployProblems() (errs []error, warnings []string) {
	var missing []string
	url := s.doRuntimeURLOf()
	_, token := s.Secrets[doRuntimeToken]
	switch {
	case url == "" && token:
		errs = append(errs, fmt.Errorf("secrets.%s is listed but environment.%s.%s is not set: set both or neither", doRuntimeToken, TurnFunctionID, doRuntimeURL))
	case url != "" && !token:
		errs = append(errs, fmt.Errorf("environment.%s.%s is set but secrets.%s is not listed: the turn function would refuse to start", TurnFunctionID, doRuntimeURL, doRuntimeToken))
	case url != "" && !strings.HasPrefix(url, "https://"):
		errs = append(errs, fmt.Errorf("environment.%s.%s %q is not an https URL", TurnFunctionID, doRuntimeURL, url))
	case url == "":
		missing = append(missing, fmt.Sprintf("environment.%s.%s (and secrets.%s) is not set: every turn of an install on the durable-object engine will answer 503 fallback_unconfigured",
			TurnFunctionID, doRuntimeURL, doRuntimeToken))
	}
	if s.AlarmEmail == "" {
		missing = append(missing, "alarmEmail is not set: SpendAlarmRaised and the operational alarms reach an ops topic nobody is subscribed to")
	}
	for _, m := range missing {
		if s.Production {
			errs = append(errs, fmt.Errorf("%s (required in a production stage)", m))
		} else {
			warnings = append(warnings, "stage "+s.Stage+": "+m)
		}
	}
	return errs, warnings
}

// Warnings are what a deploy of this stage should say before it runs:
// settings a production stage would require.
func (s *Settings) Warnings() []string {
	_, w := s.firstDeployProblems()
	return w
}

// checkFirstDeploy is validate's part for firstDeployProblems.
func (s *Settings) checkFirstDeploy() error {
	errs, _ := s.firstDeployProblems()
	return errors.Join(errs...)
}

// warn puts the stage's warnings on the stack: `cdk synth`, `cdk diff`
// and `cdk deploy` print them (the app prints them too).
func warn(st awscdk.Stack, s *Settings) {
	for _, w := range s.Warnings() {
		awscdk.Annotations_Of(st).AddWarning(jsii.String(w))
	}
}

// outputs are what operators take from the stack after a deploy
// (docs/operations.md): the ops topic to subscribe to, and each secret's
// ARN to put its value in.
func outputs(st *Stack) {
	awscdk.NewCfnOutput(st.Stack, jsii.String("OpsTopicArn"), &awscdk.CfnOutputProps{
		Description: jsii.String("The ops topic: SpendAlarmRaised and every operational alarm; subscribe on-call here (alarmEmail does it for one address)"),
		Value:       st.Events.OpsTopic.TopicArn(),
	})
	for _, name := range st.Secrets.names() {
		awscdk.NewCfnOutput(st.Stack, jsii.String(SecretOutputID(name)), &awscdk.CfnOutputProps{
			Description: jsii.String(name + "'s secret: put its value with `aws secretsmanager put-secret-value --secret-id <this ARN>`"),
			Value:       st.Secrets.arn(name),
		})
	}
}

// SecretOutputID is the output of a secret variable's ARN: LLM_API_KEY →
// LlmApiKeySecretArn.
func SecretOutputID(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		b.WriteString(strings.ToUpper(part[:1]) + strings.ToLower(part[1:]))
	}
	return b.String() + "SecretArn"
}
