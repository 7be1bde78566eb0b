package stack

import (
	"fmt"
	"slices"
	"sort"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/commonly/runtime/shared/secrets"
)

// Secrets are the stage's secrets by variable (shared/secrets.Names):
// created empty by the stack (ops put the value once, out of band, so it
// is never in a template, a context or a log) or existing ones by ARN.
type Secrets struct {
	byName map[string]awssecretsmanager.ISecret
}

func newSecrets(scope constructs.Construct, s *Settings) (*Secrets, error) {
	c := constructs.NewConstruct(scope, jsii.String("Secrets"))
	out := &Secrets{byName: map[string]awssecretsmanager.ISecret{}}
	names := make([]string, 0, len(s.Secrets))
	for name := range s.Secrets {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if !slices.Contains(secrets.Names, name) {
			return nil, fmt.Errorf("secrets.%s: not a secret variable (%v)", name, secrets.Names)
		}
		if arn := s.Secrets[name]; arn != "" {
			out.byName[name] = awssecretsmanager.Secret_FromSecretCompleteArn(c, jsii.String(name), jsii.String(arn))
			continue
		}
		removal := awscdk.RemovalPolicy_DESTROY
		if s.Production {
			removal = awscdk.RemovalPolicy_RETAIN
		}
		sec := awssecretsmanager.NewSecret(c, jsii.String(name), &awssecretsmanager.SecretProps{
			Description:   jsii.String(fmt.Sprintf("%s of the Commonly hosted runtime (%s): put its value with `aws secretsmanager put-secret-value`", name, s.Stage)),
			RemovalPolicy: removal,
		})
		// Created empty: no generated placeholder that a function would
		// take for a key. Until ops put the value, the cold start fails
		// naming the variable.
		sec.Node().DefaultChild().(awssecretsmanager.CfnSecret).AddPropertyDeletionOverride(jsii.String("GenerateSecretString"))
		cdknag.NagSuppressions_AddResourceSuppressions(sec, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-SMG4"),
			Reason: jsii.String("A third-party API key (LiteLLM, E2B, search, the Durable Object runtime, the broker): it is rotated at its issuer, which Secrets Manager cannot do; ops put the new value."),
		}}, nil)
		out.byName[name] = sec
	}
	return out, nil
}

// names are the stage's secret variables, sorted.
func (x *Secrets) names() []string {
	names := make([]string, 0, len(x.byName))
	for name := range x.byName {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// arn is the ARN variable's value: the secret's ARN, or "" when the stage
// has no such secret (the feature stays off).
func (x *Secrets) arn(name string) *string {
	if sec, ok := x.byName[name]; ok {
		return sec.SecretArn()
	}
	return jsii.String("")
}

// declare adds each secret variable as X = "" (never a plain value in
// AWS; declared so `sam local invoke --env-vars` can set it) and
// X_SECRET_ARN, and lets role read the secrets it has.
func (x *Secrets) declare(env environment, role awsiam.IRole, names ...string) {
	var arns []*string
	for _, name := range names {
		env[name] = jsii.String("")
		env[secrets.ARNVar(name)] = x.arn(name)
		if sec, ok := x.byName[name]; ok {
			arns = append(arns, sec.SecretArn())
		}
	}
	if len(arns) > 0 {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: &arns,
		}))
	}
}

// ownedVars are the variables the stack sets on a function, which a
// stage cannot: names, and each secret's X and X_SECRET_ARN.
func ownedVars(secretNames []string, names ...string) []string {
	out := append([]string(nil), names...)
	for _, n := range secretNames {
		out = append(out, n, secrets.ARNVar(n))
	}
	return out
}
