package stack

import (
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/commonly/runtime/shared/tracing"
)

// Tracing is a stage's tracing: every function sends its spans to
// X-Ray's OTLP endpoint (TRACES_XRAY), signed with its own role
// (docs/operations.md, "Tracing").
type Tracing struct {
	// Off sends no spans, and the roles get no X-Ray grant.
	Off bool `json:"off"`
	// SampleRatio is the share of turns (alarm batches, reaper sweeps)
	// that did not fail whose traces are kept; every failed one is kept.
	// Absent: DefaultTraceSampleRatio.
	SampleRatio *float64 `json:"sampleRatio"`
}

// DefaultTraceSampleRatio keeps one successful turn in twenty: enough to
// see a normal turn's shape and cost at any hour, while X-Ray bills per
// span ingested (every failed turn is kept besides).
const DefaultTraceSampleRatio = 0.05

func (t Tracing) ratio() float64 {
	if t.SampleRatio == nil {
		return DefaultTraceSampleRatio
	}
	return *t.SampleRatio
}

func (t Tracing) validate() error {
	if r := t.ratio(); r < 0 || r > 1 {
		return fmt.Errorf("tracing.sampleRatio %v is not a share from 0 to 1", r)
	}
	return nil
}

// lambdaSets are the variables tracing.ConfigFromEnv reads that Lambda
// sets itself; they are not declared.
var lambdaSets = map[string]bool{"AWS_REGION": true, "AWS_LAMBDA_FUNCTION_NAME": true}

// addTracing declares the tracing variables on env (TRACES_XRAY and the
// share set by the stage, the others empty: a stage may set them) and,
// unless tracing is off, lets role send spans to X-Ray, in a policy of
// its own: the OTLP endpoint is authorized as xray:PutTraceSegments,
// which has no resource-level permissions.
func addTracing(scope constructs.Construct, role awsiam.IRole, env environment, t Tracing) {
	for _, v := range tracing.Variables {
		if !lambdaSets[v] {
			env[v] = jsii.String("")
		}
	}
	if t.Off {
		return
	}
	env[tracing.EnvXRay] = jsii.String("true")
	env[tracing.EnvSampleRatio] = jsii.String(strconv.FormatFloat(t.ratio(), 'f', -1, 64))
	p := awsiam.NewPolicy(scope, jsii.String("TracesToXRay"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{role},
		Statements: &[]awsiam.PolicyStatement{awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("xray:PutTraceSegments"),
			Resources: jsii.Strings("*"),
		})},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(p, &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("xray:PutTraceSegments (what X-Ray's OTLP traces endpoint authorizes) has no resource-level permissions: it can only be granted on *. It is the only action of this policy."),
		AppliesTo: &[]any{"Resource::*"},
	}}, nil)
}
