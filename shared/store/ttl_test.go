package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

// Every item that expires carries the tables' TTL attribute, set by the
// same writes in AWS and locally; plans and installs never expire.
func TestItemsCarryTheirTTL(t *testing.T) {
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	db := srv.Client()
	s, err := store.New(store.Config{DB: db, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	r := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 5, IdempotencyKey: "k", CallerID: "u1", Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admit: %+v %v", res, err)
	}
	if err := s.SetPlan(ctx, "u1", turns.PlanPro, now); err != nil {
		t.Fatal(err)
	}
	sb := sandbox.NewRecord("local", "sb1", sandbox.Meta{RunID: "r1", UserID: "u1", InstallID: "i1"}, now)
	if err := s.SandboxCreated(ctx, sb); err != nil {
		t.Fatal(err)
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil {
		t.Fatal(err)
	}
	claimed.End(runs.StatusSucceeded, "", "", now)
	if err := s.FinishRun(ctx, claimed, false); err != nil {
		t.Fatal(err)
	}

	dayEnd := utcday.ResetsAt(now)
	cases := []struct {
		name  string
		table string
		key   map[string]types.AttributeValue
		want  int64 // 0: no TTL
	}{
		{"run", tables.Runs, map[string]types.AttributeValue{tablekeys.RunID: s2("r1")}, dayEnd.Add(tablekeys.Retention).Unix()},
		{"daily usage", tables.State, stateKey(tablekeys.UsageOnDay("u1", utcday.Of(now))), dayEnd.Add(tablekeys.Retention).Unix()},
		{"idempotency record", tables.State, stateKey(tablekeys.Idempotency("u1", "i1", "k")), now.Add(24 * time.Hour).Unix()},
		{"sandbox record", tables.State, stateKey(tablekeys.Sandbox("sb1")), sb.ExpiresAt.Add(24 * time.Hour).Unix()},
		{"plan", tables.State, stateKey(tablekeys.Plan("u1")), 0},
	}
	for _, c := range cases {
		out, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(c.table), Key: c.key, ConsistentRead: aws.Bool(true)})
		if err != nil || len(out.Item) == 0 {
			t.Fatalf("%s: read %v (item %v)", c.name, err, out)
		}
		n, ok := out.Item[tablekeys.TTL].(*types.AttributeValueMemberN)
		switch {
		case c.want == 0 && ok:
			t.Errorf("%s: has a TTL %s, want none", c.name, n.Value)
		case c.want != 0 && !ok:
			t.Errorf("%s: no numeric %q attribute", c.name, tablekeys.TTL)
		case c.want != 0 && n.Value != strconv.FormatInt(c.want, 10):
			t.Errorf("%s: ttl %s, want %d", c.name, n.Value, c.want)
		}
	}
}

func s2(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }

func stateKey(k tablekeys.Key) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{tablekeys.PK: s2(k.PK), tablekeys.SK: s2(k.SK)}
}
