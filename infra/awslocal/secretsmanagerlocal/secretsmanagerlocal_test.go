package secretsmanagerlocal_test

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"github.com/commonly/runtime/infra/awslocal/secretsmanagerlocal"
	"github.com/commonly/runtime/internal/awscalls"
)

// The real SDK client reads a secret by ARN, gets ResourceNotFound for
// another, and each request is recorded.
func TestGetSecretValueThroughTheSDK(t *testing.T) {
	const arn = "arn:aws:secretsmanager:us-east-1:123456789012:secret:llm-AbCdEf"
	var rec awscalls.Recorder
	s, err := secretsmanagerlocal.Start(secretsmanagerlocal.Config{Secrets: map[string]string{arn: "sk-value"}, Calls: &rec})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	out, err := s.Client().GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(arn)})
	if err != nil || aws.ToString(out.SecretString) != "sk-value" || aws.ToString(out.ARN) != arn || aws.ToString(out.Name) != "llm-AbCdEf" {
		t.Fatalf("%+v, %v", out, err)
	}
	var missing *types.ResourceNotFoundException
	if _, err := s.Client().GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String("other")}); !errors.As(err, &missing) {
		t.Fatalf("a missing secret: %v", err)
	}
	calls := rec.Calls()
	if len(calls) != 2 || awscalls.Compare(calls[0], awscalls.Call{Service: "secretsmanager", Operation: "GetSecretValue", Resource: arn}) != 0 || calls[1].Resource != "other" {
		t.Fatalf("recorded %v", calls)
	}
}
