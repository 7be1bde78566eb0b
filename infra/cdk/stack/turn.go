package stack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/shared/secrets"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// Turn settings, each with its reason.
const (
	// The worker runs a whole turn in one invocation: the loop's 170 s
	// budget (agent.DefaultMaxWall), the 5 s grace to post the answer, and
	// 5 s to kill the sandbox and write the final run. It is
	// turns.MaxTurnDuration, on which a run's deadline is built: a retry
	// after a timeout, a minute later, finds the run abandoned and closes
	// it; the reaper closes the others.
	turnTimeoutSeconds = int(turns.MaxTurnDuration / time.Second)
	// Two retries reach Lambda's 1- and 2-minute retry slots, which close
	// a run whose worker died; the worker's conditional claim makes a
	// retry harmless.
	turnDispatchRetries = 2
	// A dispatch not started within 15 minutes (both retries after two
	// timeouts fit) goes to the on-failure queue. One later than
	// turns.ClaimWindow (90 s) no longer starts its turn; the run is
	// closed by a retry or the reaper.
	turnDispatchMaxAgeMinutes = 15
	// The deployment-wide cap on concurrent code sandboxes: 90 of the
	// E2B Pro plan's 100 (docs/scale.md), so that a burst meets our clear
	// tool error, not E2B's refusal; the rest leaves room for sandboxes a
	// reaper has yet to kill. A stage with more concurrency bought sets
	// SANDBOX_MAX_CONCURRENT in its environment.
	turnMaxSandboxes = "90"
)

// turnSecrets are the turn function's secret variables: all of them.
var turnSecrets = secrets.Names

// Turn is the turn function: the HTTP API's handler and, invoked by
// itself asynchronously, the worker that runs each turn.
type Turn struct {
	*function
	// DispatchFailures receives the dispatches Lambda gave up on.
	DispatchFailures awssqs.Queue
}

func newTurn(scope constructs.Construct, s *Settings, d *Data, x *Secrets) (*Turn, error) {
	c := constructs.NewConstruct(scope, jsii.String("Turn"))
	empty := jsii.String("")
	env := environment{
		"STAGE":       jsii.String(s.Stage),
		"STATE_TABLE": d.State.TableName(),
		"RUNS_TABLE":  d.Runs.TableName(),
		// In AWS each turn runs in its own invocation (the worker).
		"TURN_DISPATCH": jsii.String("lambda"),
		// The live model and E2B, never the local stand-ins, unless a
		// stage says otherwise on purpose.
		"LLM_MODE": jsii.String("live"),
		"SANDBOX":  jsii.String("e2b"),
		// One P: shared/gomaxprocs (main reads it).
		"GOMAXPROCS":             jsii.String("1"),
		"SANDBOX_MAX_CONCURRENT": jsii.String(turnMaxSandboxes),

		"HOSTED_ENGINE": empty, "PLAN_TURN_LIMITS": empty, "INSTALL_CACHE_TTL": empty,
		"DO_RUNTIME_URL": empty, "DO_RUNTIME_TIMEOUT": empty,
		"LLM_BASE_URL": empty, "LLM_MODEL": empty, "LLM_TIMEOUT": empty,
		"TURN_MAX_USD": empty, "TURN_MAX_ATTEMPTS": empty, "PRICE_TABLE_FILE": empty, "DAILY_SPEND_CAP_USD": empty,
		"BROKER_URL": empty, "COMMONLY_API_URL": empty,
		"SEARCH_PROVIDER": empty, "SEARCH_API_URL": empty, "GITHUB_API_URL": empty,
		"E2B_DOMAIN": empty, "E2B_API_URL": empty, "E2B_SANDBOX_URL": empty, "E2B_TEMPLATE": empty,
	}
	owned := ownedVars(turnSecrets, "STAGE", "STATE_TABLE", "RUNS_TABLE")
	// The role exists before the function; the secret grants go on it.
	t := &Turn{DispatchFailures: newFailureQueue(c, "DispatchFailures")}
	fn, err := newFunction(c, s, functionSpec{
		id:          TurnFunctionID,
		dir:         "turn",
		description: "Commonly hosted turns: the HTTP API and, invoked by itself, the worker that runs each turn",
		timeout:     awscdk.Duration_Seconds(jsii.Number(turnTimeoutSeconds)),
		env:         env,
		secrets:     func(role awsiam.IRole) { x.declare(env, role, turnSecrets...) },
		override:    func() error { return env.override(TurnFunctionID, s.Environment[TurnFunctionID], owned...) },
	})
	if err != nil {
		return nil, err
	}
	t.function = fn
	// The asynchronous self-invoke (the dispatch of each turn).
	fn.Function.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		RetryAttempts: jsii.Number(turnDispatchRetries),
		MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(turnDispatchMaxAgeMinutes)),
		OnFailure:     awslambdadestinations.NewSqsDestination(t.DispatchFailures),
	})
	// The state table: reads of installs, plans and days; each write on
	// the partitions it makes: installs, plans (the service's set-plan
	// route) and idempotency records put, sandbox records put and
	// updated, a user's day updated in the admission transaction (with
	// its plan's condition check), an install updated; the sandbox cap's
	// slots taken (put), read (a shard's slots with one Query) and freed
	// (a conditional delete); a run's journal entries put (with the run,
	// in its checkpoints' transactions) and read back (one Query) by the
	// attempt that takes a stopped worker's run over, with that run's
	// sandboxes (the runSandboxes index). A write elsewhere (another
	// kind's items, a put in a user's partition, a ConditionCheck of an
	// install) is denied.
	grantTable(fn.Role, d.State, []string{"GetItem", "BatchGetItem"})
	grantKeys(fn.Role, d.State, []string{"PutItem"}, installKeys, planKeys, idemKeys, sandboxKeys, slotKeys, journalKeys)
	grantKeys(fn.Role, d.State, []string{"UpdateItem"}, installKeys, userKeys, sandboxKeys)
	grantKeys(fn.Role, d.State, []string{"ConditionCheckItem"}, planKeys)
	grantKeys(fn.Role, d.State, []string{"DeleteItem"}, slotKeys)
	grantKeys(fn.Role, d.State, []string{"Query"}, slotKeys, journalKeys)
	grantIndexes(fn.Role, d.State, []string{"Query"}, tablekeys.RunSandboxesIndex)
	// The runs table: its items, and a user's runs on the userRuns index
	// (a page's open runs read in one BatchGetItem).
	grantTable(fn.Role, d.Runs, []string{"GetItem", "BatchGetItem", "PutItem", "UpdateItem"})
	grantIndexes(fn.Role, d.Runs, []string{"Query"}, tablekeys.UserRunsIndex)
	// Invoking itself: in a policy of its own, which the function does
	// not depend on (the role's default policy would make a cycle).
	awsiam.NewPolicy(c, jsii.String("SelfInvoke"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{fn.Role},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("lambda:InvokeFunction"),
			Resources: &[]*string{fn.Function.FunctionArn()},
		})},
	})
	return t, nil
}
