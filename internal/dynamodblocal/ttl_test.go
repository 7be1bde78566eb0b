package dynamodblocal

import (
	"context"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/tablekeys"
)

func epoch(t time.Time) types.AttributeValue { return num(strconv.FormatInt(t.Unix(), 10)) }

// TestTTLSweepDeletesWithTheServiceIdentity: the sweep, every interval of
// the clock, deletes the items whose ttl has passed from both tables; the
// runs table's stream gets a REMOVE with DynamoDB's service identity.
func TestTTLSweepDeletesWithTheServiceIdentity(t *testing.T) {
	ts := newTestServer(t, Config{TTLSweepInterval: time.Minute})
	ctx := context.Background()
	later := t0.Add(time.Hour)
	ts.put(t, "runs", map[string]types.AttributeValue{"runId": str("old"), tablekeys.TTL: epoch(t0.Add(30 * time.Second))})
	ts.put(t, "runs", map[string]types.AttributeValue{"runId": str("kept"), tablekeys.TTL: epoch(later)})
	ts.put(t, "runs", map[string]types.AttributeValue{"runId": str("forever")})
	ts.put(t, "state", map[string]types.AttributeValue{"pk": str("IDEM#x"), "sk": str("IDEM"), tablekeys.TTL: epoch(t0)})
	calls := ts.subscribe(t, "runs", MappingConfig{StartingPosition: "LATEST"}, nil)

	ts.clock.WaitForTimers(1) // the sweep
	ts.clock.Advance(time.Minute)
	got := next(t, calls).event.Records
	ts.clock.WaitForTimers(1) // the sweep's next turn: this one is over (on the reference it deletes table by table)
	if len(got) != 1 {
		t.Fatalf("records %+v", got)
	}
	r := got[0]
	if r.EventName != "REMOVE" || r.Change.Keys["runId"].String() != "old" || r.Change.NewImage != nil ||
		r.Change.OldImage[tablekeys.TTL].Number() != strconv.FormatInt(t0.Add(30*time.Second).Unix(), 10) {
		t.Errorf("record %+v", r)
	}
	if r.UserIdentity == nil || *r.UserIdentity != TTLIdentity || TTLIdentity.Type != "Service" || TTLIdentity.PrincipalID != "dynamodb.amazonaws.com" {
		t.Errorf("userIdentity %+v", r.UserIdentity)
	}

	for _, k := range []struct {
		table string
		key   map[string]types.AttributeValue
		kept  bool
	}{
		{"runs", run("old"), false},
		{"runs", run("kept"), true},
		{"runs", run("forever"), true},
		{"state", map[string]types.AttributeValue{"pk": str("IDEM#x"), "sk": str("IDEM")}, false},
	} {
		out, err := ts.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(k.table), Key: k.key})
		if err != nil {
			t.Fatal(err)
		}
		if (out.Item != nil) != k.kept {
			t.Errorf("%s %v: kept %v, want %v", k.table, k.key, out.Item != nil, k.kept)
		}
	}

	// A user's delete has no identity; ExpireNow at the clock's time.
	if _, err := ts.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String("runs"), Key: run("forever")}); err != nil {
		t.Fatal(err)
	}
	if r := next(t, calls).event.Records[0]; r.UserIdentity != nil {
		t.Errorf("a user's delete: identity %+v", r.UserIdentity)
	}
	ts.clock.WaitForTimers(1)
	ts.clock.Advance(time.Hour)
	if r := next(t, calls).event.Records[0]; r.Change.Keys["runId"].String() != "kept" || r.UserIdentity == nil {
		t.Errorf("the second sweep: %+v", r)
	}
	if n := ts.ExpireNow(); n != 0 {
		t.Errorf("ExpireNow deleted %d, want 0", n)
	}
}

// TestTablesReportStreamsAndTTL: CreateTables gives both tables TTL on ttl
// and the runs table its stream, as the server reports them.
func TestTablesReportStreamsAndTTL(t *testing.T) {
	ts := newTestServer(t, Config{})
	info, err := ts.Describe(context.Background(), "state", "runs")
	if err != nil {
		t.Fatal(err)
	}
	if info[0].String() != "state: no stream, TTL on ttl" || info[1].String() != "runs: stream NEW_AND_OLD_IMAGES, TTL on ttl" {
		t.Errorf("%v", info)
	}
	// DynamoDB Local names its region "ddblocal" in its ARNs.
	if !regexp.MustCompile(`^arn:aws:dynamodb:(us-east-1|ddblocal):000000000000:table/runs/stream/.`).MatchString(info[1].StreamARN) {
		t.Errorf("stream ARN %q", info[1].StreamARN)
	}
}
