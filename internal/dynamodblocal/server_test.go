package dynamodblocal

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/shared/store"
)

// TestAWSEnvReachesTheServer: the SDK's default configuration chain, from
// AWSEnv alone, reaches the server.
func TestAWSEnvReachesTheServer(t *testing.T) {
	ctx := context.Background()
	tables := store.Tables{State: "state", Runs: "runs"}
	s, err := StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	env := s.AWSEnv()
	if env[EndpointVar] != s.URL {
		t.Errorf("env %v", env)
	}
	for _, k := range []string{"AWS_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_SESSION_TOKEN"} {
		t.Setenv(k, "")
	}
	for k, v := range env {
		t.Setenv(k, v)
	}
	cfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(tables.State)})
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(out.Table.TableName); got != tables.State {
		t.Errorf("table %q", got)
	}
}

// Closing twice returns at once, as a test's cleanup after the code under
// test closed the server needs (the second Close waited forever).
func TestCloseTwice(t *testing.T) {
	s, err := StartWithTables(context.Background(), "127.0.0.1:0", store.Tables{State: "state", Runs: "runs"})
	if err != nil {
		t.Fatal(err)
	}
	first := s.Close()
	done := make(chan error, 1)
	go func() { done <- s.Close() }()
	select {
	case err := <-done:
		if err != first {
			t.Errorf("second Close = %v, first %v", err, first)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the second Close blocks")
	}
}
