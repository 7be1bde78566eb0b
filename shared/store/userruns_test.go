package store_test

import (
	"context"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// A run is on the user-runs index from its admission, with its keys
// alone while it is open (claims, checkpoints and events change nothing
// the index holds) and its summary from its final write on: two index
// writes a run.
func TestUserRunsIndexHoldsTheFinalSummaryOnly(t *testing.T) {
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	s, err := store.New(store.Config{DB: srv.Client(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	entry := func() map[string]types.AttributeValue {
		t.Helper()
		out, err := srv.Client().Query(ctx, &dynamodb.QueryInput{
			TableName: aws.String(tables.Runs), IndexName: aws.String(tablekeys.UserRunsIndex),
			KeyConditionExpression:    aws.String("#u = :u"),
			ExpressionAttributeNames:  map[string]string{"#u": tablekeys.UserRunsPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":u": &types.AttributeValueMemberS{Value: "u1"}},
		})
		if err != nil || len(out.Items) != 1 {
			t.Fatalf("index: %v, %v", out, err)
		}
		return out.Items[0]
	}
	attrs := func(item map[string]types.AttributeValue) []string {
		var names []string
		for k := range item {
			names = append(names, k)
		}
		slices.Sort(names)
		return names
	}
	keysOnly := []string{tablekeys.RunID, tablekeys.UserRunsPK, tablekeys.UserRunsSK}
	r := newRun("r1", "u1", now)
	if res, _ := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 5, Now: now}); !res.Admitted {
		t.Fatal("not admitted")
	}
	if got := attrs(entry()); !slices.Equal(got, keysOnly) {
		t.Errorf("admitted: the entry holds %v, want %v", got, keysOnly)
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil {
		t.Fatal(err)
	}
	claimed.Tokens.Add(100, 0, 10)
	if err := s.CheckpointRun(ctx, claimed, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveRunEvents(ctx, "r1", claimed.Attempts, claimed.Lease, []runs.StoredEvent{{ID: 1, Type: runs.EventRunStarted, Data: "{}"}}); err != nil {
		t.Fatal(err)
	}
	if got := attrs(entry()); !slices.Equal(got, keysOnly) {
		t.Errorf("running: the entry holds %v, want %v", got, keysOnly)
	}
	claimed.End(runs.StatusSucceeded, "", "", now)
	if err := s.FinishRun(ctx, claimed, false); err != nil {
		t.Fatal(err)
	}
	final := entry()
	if got, want := attrs(final), append(slices.Clone(keysOnly), tablekeys.UserRunsSummary); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("final: the entry holds %v, want %v", got, want)
	}
	if at := final[tablekeys.UserRunsSK].(*types.AttributeValueMemberS).Value; at != tablekeys.UserRunsSort(now) {
		t.Errorf("sorted at %q, want %q", at, tablekeys.UserRunsSort(now))
	}
	page, err := s.ListRuns(ctx, "u1", "", 10)
	if err != nil || len(page.Runs) != 1 || page.Runs[0].Status != runs.StatusSucceeded || page.Runs[0].Tokens.Total != 110 {
		t.Errorf("ListRuns = %+v, %v", page, err)
	}
}
