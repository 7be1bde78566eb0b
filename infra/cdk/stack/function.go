package stack

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/commonly/runtime/infra/lambdamem"
)

// functionSpec is what differs between the three functions.
type functionSpec struct {
	id          string // construct id (TurnFunction, …)
	dir         string // the bootstrap's directory under Settings.AssetDir
	description string
	timeout     awscdk.Duration
	env         environment
	// secrets declares the secret variables on env and grants role their
	// reading (Secrets.declare); nil for a function without secrets.
	secrets func(role awsiam.IRole)
	// override applies the stage's values to env, after secrets.
	override func() error
}

// function is a Lambda function with its own role and log group.
type function struct {
	Function awslambda.Function
	Role     awsiam.Role
	LogGroup awslogs.LogGroup
}

// newFunction builds a provided.al2023 function from the bootstrap `make
// build` produced, with its memory from infra/lambdamem (the size the
// scale model prices), its own role (no managed policies: each grant is
// added where the function's concern is built) and its own log group.
func newFunction(scope constructs.Construct, s *Settings, spec functionSpec) (*function, error) {
	sizes, err := lambdamem.Load()
	if err != nil {
		return nil, err
	}
	memoryMB, err := sizes.MB(spec.id)
	if err != nil {
		return nil, err
	}
	logs := newLogGroup(scope, spec.id+"Logs", s)
	role := awsiam.NewRole(scope, jsii.String(spec.id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String(spec.id + ": its own grants only"),
	})
	// The log group exists already (above), so the function only creates
	// streams in it and writes.
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: jsii.Strings(*logs.LogGroupArn()),
	}))
	if spec.secrets != nil {
		spec.secrets(role)
	}
	addTracing(scope, role, spec.env, s.Tracing)
	if spec.override != nil {
		if err := spec.override(); err != nil {
			return nil, err
		}
	}
	var reserved *float64
	if n := s.ReservedConcurrency[spec.id]; n > 0 {
		reserved = jsii.Number(float64(n))
	}
	arch := awslambda.Architecture_ARM_64()
	if s.Architecture == X86_64 {
		arch = awslambda.Architecture_X86_64()
	}
	fn := awslambda.NewFunction(scope, jsii.String(spec.id), &awslambda.FunctionProps{
		Description:  jsii.String(spec.description),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: arch,
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(s.AssetDir, spec.dir)), nil),
		MemorySize:   jsii.Number(float64(memoryMB)),
		Timeout:      spec.timeout,
		Role:         role,
		LogGroup:     logs,
		// JSON: lambdacontext's slog handler writes JSON only when Lambda
		// says the format is JSON (AWS_LAMBDA_LOG_FORMAT).
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2:        awslambda.ApplicationLogLevel_INFO,
		SystemLogLevelV2:             awslambda.SystemLogLevel_WARN,
		ReservedConcurrentExecutions: reserved,
		Environment:                  spec.env.values(),
	})
	return &function{Function: fn, Role: role, LogGroup: logs}, nil
}

// newLogGroup is a log group with the stage's retention.
func newLogGroup(scope constructs.Construct, id string, s *Settings) awslogs.LogGroup {
	removal := awscdk.RemovalPolicy_DESTROY
	if s.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	lg := awslogs.NewLogGroup(scope, jsii.String(id), &awslogs.LogGroupProps{RemovalPolicy: removal})
	// Days as a number: the L2 takes a fixed enum of names.
	lg.Node().DefaultChild().(awslogs.CfnLogGroup).SetRetentionInDays(jsii.Number(float64(s.LogRetentionDays)))
	return lg
}

// grantTable grants actions on a table's items (not its indexes).
func grantTable(role awsiam.IRole, t awsdynamodb.Table, actions []string) {
	grant(role, actions, t.TableArn())
}

// grantIndexes grants actions on the named indexes of a table only (a
// Query of an index needs no grant on the table).
func grantIndexes(role awsiam.IRole, t awsdynamodb.Table, actions []string, indexes ...string) {
	resources := make([]*string, len(indexes))
	for i, ix := range indexes {
		resources[i] = jsii.String(fmt.Sprintf("%s/index/%s", *t.TableArn(), ix))
	}
	grant(role, actions, resources...)
}

// grant is one statement of DynamoDB actions on resources.
func grant(role awsiam.IRole, actions []string, resources ...*string) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: dynamoActions(actions), Resources: &resources}))
}

// dynamoActions names DynamoDB's actions for a policy statement.
func dynamoActions(actions []string) *[]*string {
	ddb := make([]*string, len(actions))
	for i, a := range actions {
		ddb[i] = jsii.String("dynamodb:" + a)
	}
	return &ddb
}

// environment is a function's declared variables: every variable it
// reads, with its value in AWS. "" means the function's own default
// (docs/operations.md, "Configuration").
type environment map[string]*string

func (e environment) values() *map[string]*string {
	m := map[string]*string(e)
	return &m
}

// names are the declared variables, sorted.
func (e environment) names() []string {
	out := make([]string, 0, len(e))
	for k := range e {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// override applies the stage's values. Only a declared variable that the
// stack does not own (tables, bus, stage, secret ARNs) can be set, and
// never a secret's plain value.
func (e environment) override(fn string, set map[string]string, owned ...string) error {
	for name, v := range set {
		if _, ok := e[name]; !ok {
			return fmt.Errorf("environment.%s.%s: %s does not read it (declared: %v)", fn, name, fn, e.names())
		}
		if slices.Contains(owned, name) {
			return fmt.Errorf("environment.%s.%s: set by the stack, not the stage", fn, name)
		}
		e[name] = jsii.String(v)
	}
	return nil
}

// newFailureQueue is an on-failure destination: what Lambda gave up on,
// kept 14 days (SQS's longest) for ops to inspect and redrive; its depth
// is alarmed (observability.go).
func newFailureQueue(scope constructs.Construct, id string) awssqs.Queue {
	q := awssqs.NewQueue(scope, jsii.String(id), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
	})
	cdknag.NagSuppressions_AddResourceSuppressions(q, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-SQS3"),
		Reason: jsii.String("This queue is itself the dead-letter (on-failure) destination; nothing consumes it automatically, ops inspect and redrive it."),
	}}, nil)
	return q
}
