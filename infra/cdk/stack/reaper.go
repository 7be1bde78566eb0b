package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/shared/tablekeys"
)

// Reaper settings, each with its reason.
const (
	// ReaperSchedule is the sweep's schedule: a sandbox outlives its
	// three-minute lifetime by at most a minute.
	ReaperSchedule = "rate(1 minute)"
	// Below the schedule's period, so one sweep ends before the next;
	// the sweep's own deadline sits below this timeout.
	reaperTimeoutSeconds = 55
)

// reaperSecrets are the reaper's secret variables.
var reaperSecrets = []string{"E2B_API_KEY"}

// Reaper is the reaper function and its schedule.
type Reaper struct {
	*function
	Schedule awsevents.Rule
}

func newReaper(scope constructs.Construct, s *Settings, d *Data, x *Secrets, turn *Turn) (*Reaper, error) {
	c := constructs.NewConstruct(scope, jsii.String("Reaper"))
	empty := jsii.String("")
	env := environment{
		"STAGE":       jsii.String(s.Stage),
		"STATE_TABLE": d.State.TableName(),
		"RUNS_TABLE":  d.Runs.TableName(),
		// The turn function, to which a run whose worker stopped with
		// attempts left is dispatched again.
		"TURN_FUNCTION_NAME": turn.function.Function.FunctionName(),
		"SANDBOX":            jsii.String("e2b"),
		"E2B_DOMAIN":         empty, "E2B_API_URL": empty, "SANDBOX_LIFETIME": empty,
	}
	owned := ownedVars(reaperSecrets, "STAGE", "STATE_TABLE", "RUNS_TABLE", "TURN_FUNCTION_NAME")
	fn, err := newFunction(c, s, functionSpec{
		id:          ReaperFunctionID,
		dir:         "reaper",
		description: "Commonly hosted runtime: every minute, kills sandboxes past their lifetime and closes orphaned runs",
		timeout:     awscdk.Duration_Seconds(jsii.Number(reaperTimeoutSeconds)),
		env:         env,
		secrets:     func(role awsiam.IRole) { x.declare(env, role, reaperSecrets...) },
		override:    func() error { return env.override(ReaperFunctionID, s.Environment[ReaperFunctionID], owned...) },
	})
	if err != nil {
		return nil, err
	}
	// A missed sweep is replaced by the next one: no retries, and an
	// event older than the period is dropped.
	fn.Function.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(0),
		MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
	})
	r := &Reaper{function: fn}
	r.Schedule = awsevents.NewRule(c, jsii.String("Schedule"), &awsevents.RuleProps{
		Description: jsii.String("The reaper's sweep"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(ReaperSchedule)),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(fn.Function, &awseventstargets.LambdaFunctionProps{
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Seconds(jsii.Number(60)),
		})},
	})
	// Each action on exactly what a sweep touches. The state table:
	// queries of the live index (expired sandboxes) and of runSandboxes
	// (a closed run's sandboxes), and conditional updates of sandbox
	// records (marked killed) and of a user's day (a refund's ADD, in
	// FinishRun's transaction), nothing else of its items.
	grantIndexes(fn.Role, d.State, []string{"Query"}, tablekeys.LiveIndex, tablekeys.RunSandboxesIndex)
	grantKeys(fn.Role, d.State, []string{"UpdateItem"}, sandboxKeys, userKeys)
	// The runs table: the open index, closing a run (read it, write it
	// whole with FinishRun's conditional Put) and marking a re-dispatch
	// (a conditional UpdateItem).
	grantIndexes(fn.Role, d.Runs, []string{"Query"}, tablekeys.OpenIndex)
	grantTable(fn.Role, d.Runs, []string{"GetItem", "PutItem", "UpdateItem"})
	// The turn function, invoked asynchronously with a run's dispatch
	// event: that one function, nothing else.
	fn.Role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("lambda:InvokeFunction"),
		Resources: &[]*string{turn.function.Function.FunctionArn()},
	}))
	return r, nil
}
