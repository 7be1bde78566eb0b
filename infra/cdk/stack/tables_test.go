package stack

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/store"
)

// recordingDynamo records what store.CreateTables asks of DynamoDB.
type recordingDynamo struct {
	creates []*dynamodb.CreateTableInput
	ttls    []*dynamodb.UpdateTimeToLiveInput
}

func (r *recordingDynamo) CreateTable(_ context.Context, in *dynamodb.CreateTableInput, _ ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error) {
	r.creates = append(r.creates, in)
	return &dynamodb.CreateTableOutput{}, nil
}

// DescribeTimeToLive answers as for a new table: TTL off.
func (r *recordingDynamo) DescribeTimeToLive(_ context.Context, in *dynamodb.DescribeTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error) {
	return &dynamodb.DescribeTimeToLiveOutput{TimeToLiveDescription: &types.TimeToLiveDescription{TimeToLiveStatus: types.TimeToLiveStatusDisabled}}, nil
}

func (r *recordingDynamo) UpdateTimeToLive(_ context.Context, in *dynamodb.UpdateTimeToLiveInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error) {
	r.ttls = append(r.ttls, in)
	return &dynamodb.UpdateTimeToLiveOutput{}, nil
}

// schemaKeys are the properties a table's schema consists of, named alike
// in CreateTableInput and AWS::DynamoDB::Table.
var schemaKeys = []string{"AttributeDefinitions", "KeySchema", "BillingMode", "GlobalSecondaryIndexes",
	"LocalSecondaryIndexes", "StreamSpecification", "ProvisionedThroughput", "TableClass", "SSESpecification"}

// comparable turns either side into the same shape: no nulls or empty
// values, lists of named things sorted by name, no table name (the stack
// names no table), and no StreamEnabled (CloudFormation has only the view
// type, and a view type means enabled).
func comparable(t *testing.T, v any) map[string]any {
	t.Helper()
	var m map[string]any
	raw, _ := json.Marshal(v)
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	clean := prune(m).(map[string]any)
	delete(clean, "TableName")
	if ss, ok := clean["StreamSpecification"].(map[string]any); ok {
		delete(ss, "StreamEnabled")
	}
	for k := range clean {
		if !slices.Contains(schemaKeys, k) {
			t.Errorf("CreateTables sets %s, which this test does not compare yet: add it to schemaKeys", k)
		}
	}
	return clean
}

func prune(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if p := prune(e); p != nil {
				out[k] = p
			}
		}
		if len(out) == 0 {
			return nil
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			if p := prune(e); p != nil {
				out = append(out, p)
			}
		}
		if len(out) == 0 {
			return nil
		}
		slices.SortFunc(out, func(a, b any) int {
			return compareNames(a, b)
		})
		return out
	case bool:
		if !x {
			return nil
		}
		return x
	case string:
		if x == "" {
			return nil
		}
		return x
	}
	return v
}

// compareNames orders named elements (attribute definitions by name,
// indexes by name); key schemas keep HASH before RANGE.
func compareNames(a, b any) int {
	name := func(v any) string {
		m, _ := v.(map[string]any)
		if n, ok := m["IndexName"].(string); ok {
			return n
		}
		if _, isKey := m["KeyType"]; isKey {
			return "" // keep a key schema's order
		}
		n, _ := m["AttributeName"].(string)
		return n
	}
	na, nb := name(a), name(b)
	switch {
	case na < nb:
		return -1
	case na > nb:
		return 1
	}
	return 0
}

// TestTablesAgreeWithCreateTables drives store.CreateTables, the one
// definition of the tables that the local stack and every test use,
// with a recording client, and checks that the stack's tables have
// exactly that schema, so local and AWS cannot drift.
func TestTablesAgreeWithCreateTables(t *testing.T) {
	x := synth(t, devSettings())
	rec := &recordingDynamo{}
	if err := store.CreateTables(context.Background(), rec, store.Tables{State: "state", Runs: "runs"}); err != nil {
		t.Fatal(err)
	}
	stackTables := map[string]string{"state": x.id(x.Data.State), "runs": x.id(x.Data.Runs)}
	if len(rec.creates) != len(stackTables) || len(x.ofType("AWS::DynamoDB::Table")) != len(stackTables) {
		t.Fatalf("CreateTables creates %d tables, the stack has %d", len(rec.creates), len(x.ofType("AWS::DynamoDB::Table")))
	}
	ttl := map[string]string{}
	for _, u := range rec.ttls {
		if aws.ToBool(u.TimeToLiveSpecification.Enabled) {
			ttl[aws.ToString(u.TableName)] = aws.ToString(u.TimeToLiveSpecification.AttributeName)
		}
	}
	for _, in := range rec.creates {
		name := aws.ToString(in.TableName)
		logical, ok := stackTables[name]
		if !ok {
			t.Fatalf("CreateTables creates %q, which the stack lacks", name)
		}
		want := comparable(t, in)
		props := x.props(t, logical)
		got := map[string]any{}
		for _, k := range schemaKeys {
			if v, ok := props[k]; ok {
				got[k] = v
			}
		}
		equal(t, name+" table schema (stack vs store.CreateTables)", prune(norm(got)), want)

		// TTL: as CreateTables turns it on.
		attr, ok := ttl[name]
		if !ok {
			t.Errorf("CreateTables does not turn on %s's TTL", name)
		}
		equal(t, name+" TTL", props["TimeToLiveSpecification"], map[string]any{"AttributeName": attr, "Enabled": true})
	}
}

func TestTablesProtectionByStage(t *testing.T) {
	for _, c := range []struct {
		s       Settings
		protect bool
		policy  string
	}{{devSettings(), false, "Delete"}, {prodSettings(), true, "Retain"}} {
		x := synth(t, c.s)
		for _, tbl := range []string{x.id(x.Data.State), x.id(x.Data.Runs)} {
			r := x.resource(t, tbl)
			p := r["Properties"].(map[string]any)
			equal(t, c.s.Stage+" "+tbl+" PITR", p["PointInTimeRecoverySpecification"], map[string]any{"PointInTimeRecoveryEnabled": true})
			equal(t, c.s.Stage+" "+tbl+" deletion protection", p["DeletionProtectionEnabled"], c.protect)
			equal(t, c.s.Stage+" "+tbl+" policies", []any{r["DeletionPolicy"], r["UpdateReplacePolicy"]}, []any{c.policy, c.policy})
			equal(t, c.s.Stage+" "+tbl+" billing", p["BillingMode"], "PAY_PER_REQUEST")
			if _, named := p["TableName"]; named {
				t.Errorf("%s has a physical name", tbl)
			}
		}
	}
}
