package app_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/functions/turn/app"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/runs"
)

// TestTurnOnTheTemplatesTables: the two tables made from the synthesized
// template's own definitions (keys, attributes, every index with its
// projection, the stream, TTL), not from store.CreateTables, carry a turn,
// and the runs stream delivers its run; so the tables the stack deploys and
// the ones the tests use cannot drift. In `make test` it runs on the
// embedded server and on DynamoDB Local.
func TestTurnOnTheTemplatesTables(t *testing.T) {
	path := os.Getenv("CDK_TEMPLATE")
	if path == "" {
		t.Skip("CDK_TEMPLATE is set by `make test` (after `make synth`)")
	}
	tables, err := dynamodblocal.TemplateTables(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	finals := make(chan events.DynamoDBEventRecord, 10)
	var info []dynamodblocal.TableInfo
	s := newStackDeps(t, nil, func(_ *app.Deps, db *dynamodblocal.Server) {
		client := db.Client()
		for id, name := range map[string]string{"StateTable": "state", "RunsTable": "runs"} {
			tt, ok := tables[id]
			if !ok {
				t.Fatalf("the template has no %s: %v", id, tables)
			}
			if _, err := client.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
				t.Fatal(err)
			}
			if err := db.CreateTemplateTable(ctx, tt, name); err != nil {
				t.Fatal(err)
			}
		}
		if info, err = db.Describe(ctx, "state", "runs"); err != nil {
			t.Fatal(err)
		}
		stop, err := db.Subscribe(ctx, "runs", func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			for _, r := range ev.Records {
				if st, ok := r.Change.NewImage["status"]; ok && st.String() == string(runs.StatusSucceeded) {
					finals <- r
				}
			}
			return events.DynamoDBEventResponse{}, nil
		}, dynamodblocal.MappingConfig{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}, llmtest.Text("Hello from the deployed schema."))

	if info[0].String() != "state: no stream, TTL on ttl" || info[1].String() != "runs: stream NEW_AND_OLD_IMAGES, TTL on ttl" {
		t.Errorf("the template's tables: %v", info)
	}
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
	run := s.turn(t, "hello")
	if run.Status != runs.StatusSucceeded || run.FinalMessage != "Hello from the deployed schema." {
		t.Fatalf("run = %s %s %q", run.Status, run.ErrorKind, run.ErrorMessage)
	}
	// The open-runs index (KEYS_ONLY) and the usage read work on them too.
	u := s.call(t, apiEvent("GET", "/v1/me/usage", "user-1", false, "", nil))
	if u.StatusCode != 200 {
		t.Errorf("usage: %d %s", u.StatusCode, u.Body)
	}
	select {
	case r := <-finals:
		if r.Change.Keys["runId"].String() != run.RunID {
			t.Errorf("the stream's final record is of %s, want %s", r.Change.Keys["runId"].String(), run.RunID)
		}
	case <-time.After(30 * time.Second): // bounds a failing test only
		t.Error("no stream record of the finished run")
	}
}
