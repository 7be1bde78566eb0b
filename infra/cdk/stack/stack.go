package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Name is the stack's name for a stage: cdk.out/<Name>.template.json.
func Name(stage string) string { return "CommonlyHostedRuntime-" + stage }

// Stack is the runtime's stack and its parts, for tests.
type Stack struct {
	awscdk.Stack
	Data          *Data
	Secrets       *Secrets
	Events        *Events
	Turn          *Turn
	Alarm         *Alarm
	Reaper        *Reaper
	RunEvents     *RunEvents
	API           *API
	Observability *Observability
}

// New builds the stage's stack in app. The stack is environment-agnostic
// (no lookups), so it synthesizes without an AWS account.
func New(app constructs.Construct, s Settings) (*Stack, error) {
	s.withDefaults()
	if err := s.validate(); err != nil {
		return nil, err
	}
	if err := s.checkAssets("turn", "alarm", "reaper", "events"); err != nil {
		return nil, err
	}
	st := &Stack{Stack: awscdk.NewStack(app, jsii.String(Name(s.Stage)), &awscdk.StackProps{
		Description: jsii.String("Commonly hosted-turn runtime (" + s.Stage + "): the turn, alarm and reaper functions, their tables, API, events and alarms"),
		Tags:        &map[string]*string{"app": jsii.String("commonly-hosted-runtime"), "stage": jsii.String(s.Stage)},
	})}
	var err error
	st.Data = newData(st.Stack, &s)
	if st.Secrets, err = newSecrets(st.Stack, &s); err != nil {
		return nil, err
	}
	st.Events = newEvents(st.Stack, &s)
	if st.Turn, err = newTurn(st.Stack, &s, st.Data, st.Secrets); err != nil {
		return nil, err
	}
	if st.Alarm, err = newAlarm(st.Stack, &s, st.Data, st.Events); err != nil {
		return nil, err
	}
	if st.Reaper, err = newReaper(st.Stack, &s, st.Data, st.Secrets, st.Turn); err != nil {
		return nil, err
	}
	if st.RunEvents, err = newRunEvents(st.Stack, &s, st.Data); err != nil {
		return nil, err
	}
	if st.API, err = newAPI(st.Stack, &s, st.Turn); err != nil {
		return nil, err
	}
	st.Observability = newObservability(st.Stack, &s, st.Events, st.Turn, st.Alarm, st.Reaper)
	outputs(st)
	warn(st.Stack, &s)
	return st, nil
}

// Check runs cdk-nag's AwsSolutions rules on everything under scope at
// synthesis; a finding that is not suppressed (with its reason, beside
// the construct it concerns) is an error annotation and fails `cdk synth`.
func Check(scope constructs.IConstruct) {
	awscdk.Aspects_Of(scope).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}
