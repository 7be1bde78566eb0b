package store_test

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
)

// queryingDB counts the Queries the store makes.
type queryingDB struct {
	store.DynamoAPI
	mu      sync.Mutex
	queries int
}

func (q *queryingDB) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	q.mu.Lock()
	q.queries++
	q.mu.Unlock()
	return q.DynamoAPI.Query(ctx, in, opts...)
}

func (q *queryingDB) count() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := q.queries
	q.queries = 0
	return n
}

// reclaimStore is a store on its own embedded server, with the raw client
// (to read the index as DynamoDB holds it) and a count of its Queries.
// shards is Config.IndexShards (0: the default).
func reclaimStore(t *testing.T, shards int) (*store.Dynamo, *dynamodb.Client, *queryingDB) {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	db := &queryingDB{DynamoAPI: srv.Client()}
	s, err := store.New(store.Config{DB: db, Tables: tables, IndexShards: shards})
	if err != nil {
		t.Fatal(err)
	}
	return s, srv.Client(), db
}

func admit(t *testing.T, s *store.Dynamo, id string, at time.Time) *runs.Run {
	t.Helper()
	r := newRun(id, "u-"+id, at)
	if res, err := s.Admit(context.Background(), turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 30, Now: at}); err != nil || !res.Admitted {
		t.Fatalf("admit %s: %+v %v", id, res, err)
	}
	return r
}

// indexed is the open index as DynamoDB holds it: every entry of every
// shard, oldest first. Each entry must be in its run id's shard.
func indexed(t *testing.T, db *dynamodb.Client, shards int) []map[string]types.AttributeValue {
	t.Helper()
	var all []map[string]types.AttributeValue
	for shard := range shards {
		out, err := db.Query(context.Background(), &dynamodb.QueryInput{
			TableName:                 aws.String(tables.Runs),
			IndexName:                 aws.String(tablekeys.OpenIndex),
			KeyConditionExpression:    aws.String("#pk = :open"),
			ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.OpenPK},
			ExpressionAttributeValues: map[string]types.AttributeValue{":open": &types.AttributeValueMemberS{Value: tablekeys.OpenPartition(shard)}},
		})
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range out.Items {
			if id := item[tablekeys.RunID].(*types.AttributeValueMemberS).Value; tablekeys.Shard(id, shards) != shard {
				t.Errorf("run %s on shard %d, its id's shard is %d", id, shard, tablekeys.Shard(id, shards))
			}
		}
		all = append(all, out.Items...)
	}
	since := func(item map[string]types.AttributeValue) string {
		return item[tablekeys.OpenSK].(*types.AttributeValueMemberS).Value
	}
	slices.SortStableFunc(all, func(a, b map[string]types.AttributeValue) int { return cmp.Compare(since(a), since(b)) })
	return all
}

func indexedIDs(t *testing.T, db *dynamodb.Client, shards int) []string {
	t.Helper()
	var ids []string
	for _, item := range indexed(t, db, shards) {
		ids = append(ids, item[tablekeys.RunID].(*types.AttributeValueMemberS).Value)
	}
	return ids
}

// The open index holds exactly the open runs: admission puts a run on it,
// its claim and checkpoints keep it there, and every final write (the
// worker's, the unstarted failure's with its refund) takes it off.
func TestOpenIndexHoldsOnlyOpenRuns(t *testing.T) {
	s, db, _ := reclaimStore(t, 0)
	n := s.IndexShards()
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i, id := range []string{"r1", "r2", "r3"} {
		admit(t, s, id, t0.Add(time.Duration(i)*time.Second))
	}
	if got := indexedIDs(t, db, n); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("after admission: %v", got)
	}
	// Keys only: the index costs nothing when a claim or a checkpoint
	// rewrites the run.
	for name := range indexed(t, db, n)[0] {
		if name != tablekeys.RunID && name != tablekeys.OpenPK && name != tablekeys.OpenSK {
			t.Errorf("the open index projects %s", name)
		}
	}
	r2, err := s.ClaimRun(ctx, "r2", t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r2.Steps = append(r2.Steps, runs.Step{Model: "m", CompletionTokens: 5, CostMicros: 70})
	r2.AddCost(runs.Cost{ModelMicros: 70})
	if err := s.CheckpointRun(ctx, r2, nil); err != nil {
		t.Fatal(err)
	}
	if got := indexedIDs(t, db, n); !slices.Equal(got, []string{"r1", "r2", "r3"}) {
		t.Fatalf("after a claim and a checkpoint: %v", got)
	}
	r1, err := s.ClaimRun(ctx, "r1", t0.Add(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	r1.End(runs.StatusSucceeded, "", "", t0.Add(9*time.Second))
	if err := s.FinishRun(ctx, r1, false); err != nil {
		t.Fatal(err)
	}
	r3 := newRun("r3", "u-r3", t0.Add(2*time.Second)) // failed before dispatch, refunded
	r3.End(runs.StatusFailed, runs.ErrConfig, "dispatch failed", t0.Add(3*time.Second))
	if err := s.FinishRun(ctx, r3, true); err != nil {
		t.Fatal(err)
	}
	if got := indexedIDs(t, db, n); !slices.Equal(got, []string{"r2"}) {
		t.Fatalf("after two final writes: %v", got)
	}
	r2.End(runs.StatusInterrupted, runs.ErrInterrupted, "gone", t0.Add(time.Hour))
	if err := s.FinishRun(ctx, r2, false); err != nil {
		t.Fatal(err)
	}
	if got := indexed(t, db, n); len(got) != 0 {
		t.Fatalf("finished runs left on the open index: %v", got)
	}
	for shard := range n {
		open, err := s.OpenRuns(ctx, shard, t0.Add(time.Hour), 10)
		if err != nil || len(open) != 0 {
			t.Fatalf("open runs of shard %d after every run finished: %v, %v", shard, open, err)
		}
	}
	// The run itself reads back without the index's attributes.
	if got, err := s.GetRun(ctx, "r2"); err != nil || got.Status != runs.StatusInterrupted || got.CostMicros != 70 {
		t.Fatalf("r2 = %+v, %v", got, err)
	}
}

// OpenRuns lists the runs of a shard admitted before its bound, oldest
// first, page after page, and stops at its limit (one shard, so that
// every run is on it).
func TestOpenRunsFollowsPagesAndStopsAtLimit(t *testing.T) {
	s, _, db := reclaimStore(t, 1)
	store.SetOpenPage(s, 5)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	// Admitted in an order that is not their ids' nor their admission's,
	// with fractions of a second that RFC 3339 would trim.
	const n = 23
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("run-%02d", i))
	}
	for _, i := range []int{7, 0, 22, 3, 15, 1, 19, 4, 11, 2, 8, 21, 5, 13, 6, 17, 9, 20, 10, 14, 12, 18, 16} {
		admit(t, s, want[i], t0.Add(time.Duration(i)*1500*time.Millisecond+time.Duration(i)*time.Millisecond))
	}
	before := t0.Add(20 * 1500 * time.Millisecond) // run-20 and later are too young
	db.count()
	cases := []struct {
		limit   int
		want    []string
		queries int
	}{
		{100, want[:20], 5}, // four full pages, then an empty one ends the index
		{7, want[:7], 2},
		{5, want[:5], 1},
		{1, want[:1], 1},
	}
	for _, c := range cases {
		open, err := s.OpenRuns(ctx, 0, before, c.limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range open {
			ids = append(ids, o.RunID)
		}
		if !slices.Equal(ids, c.want) {
			t.Errorf("limit %d: %v, want %v", c.limit, ids, c.want)
		}
		if q := db.count(); q > c.queries {
			t.Errorf("limit %d: %d queries, want at most %d", c.limit, q, c.queries)
		}
		for i, o := range open {
			if at := t0.Add(time.Duration(i)*1500*time.Millisecond + time.Duration(i)*time.Millisecond); !o.Since.Equal(at) {
				t.Errorf("%s since %s, want its admission %s", o.RunID, o.Since, at)
			}
		}
	}
	if _, err := s.OpenRuns(ctx, 0, before, 0); err == nil {
		t.Error("a limit of 0 was accepted")
	}
}

// A run is claimed only within turns.ClaimWindow of its admission.
func TestClaimWithinTheClaimWindow(t *testing.T) {
	s, _, _ := reclaimStore(t, 0)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	admit(t, s, "on-time", t0)
	admit(t, s, "late", t0)
	if _, err := s.ClaimRun(ctx, "on-time", t0.Add(turns.ClaimWindow)); err != nil {
		t.Fatalf("a claim at the window's end: %v", err)
	}
	cur, err := s.ClaimRun(ctx, "late", t0.Add(turns.ClaimWindow+time.Nanosecond))
	if !errors.Is(err, turns.ErrNotClaimable) || cur == nil || cur.Status != runs.StatusQueued {
		t.Fatalf("a claim past the window: %+v, %v", cur, err)
	}
}

// A run's sandboxes are one Query on the runSandboxes index: those still
// running, not the killed ones, not another run's.
func TestRunSandboxes(t *testing.T) {
	s, _, db := reclaimStore(t, 0)
	ctx := context.Background()
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for _, sb := range []struct{ provider, id, run string }{
		{"e2b", "sbx-a", "r1"}, {"local", "sbx-b", "r1"}, {"e2b", "sbx-killed", "r1"}, {"e2b", "sbx-other", "r2"},
	} {
		if err := s.SandboxCreated(ctx, sandbox.NewRecord(sb.provider, sb.id, sandbox.Meta{RunID: sb.run, UserID: "u1", InstallID: "i1"}, t0)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SandboxKilled(ctx, "sbx-killed", t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	// An idempotency record also carries a runId: it is not a sandbox.
	admit(t, s, "r1", t0)
	if _, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: newRun("r9", "u9", t0), Limit: 30, Now: t0, IdempotencyKey: "k", CallerID: "u9"}); err != nil {
		t.Fatal(err)
	}
	db.count()
	got, err := s.RunSandboxes(ctx, "r1")
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(got, func(a, b turns.SandboxRef) int { return cmp.Compare(a.SandboxID, b.SandboxID) })
	if want := []turns.SandboxRef{{Provider: "e2b", SandboxID: "sbx-a", CreatedAt: t0}, {Provider: "local", SandboxID: "sbx-b", CreatedAt: t0}}; !slices.Equal(got, want) {
		t.Fatalf("sandboxes of r1 = %v, want %v", got, want)
	}
	if q := db.count(); q != 1 {
		t.Errorf("%d queries, want one", q)
	}
	for _, id := range []string{"r9", "none"} {
		if got, err := s.RunSandboxes(ctx, id); err != nil || len(got) != 0 {
			t.Errorf("sandboxes of %s = %v, %v", id, got, err)
		}
	}
}

// failingQueries fails every Query after the first `ok`.
type failingQueries struct {
	store.DynamoAPI
	ok int
}

func (f *failingQueries) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if f.ok == 0 {
		return nil, errors.New("operation error DynamoDB: Query, https response error StatusCode: 500")
	}
	f.ok--
	return f.DynamoAPI.Query(ctx, in, opts...)
}

// A page that fails ends the listing with an error and the runs of the
// pages read before it.
func TestOpenRunsKeepsThePagesReadBeforeAFailure(t *testing.T) {
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	db := &failingQueries{DynamoAPI: srv.Client(), ok: 1}
	s, err := store.New(store.Config{DB: db, Tables: tables, IndexShards: 1})
	if err != nil {
		t.Fatal(err)
	}
	store.SetOpenPage(s, 5)
	t0 := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	for i := range 12 {
		admit(t, s, fmt.Sprintf("run-%02d", i), t0.Add(time.Duration(i)*time.Second))
	}
	open, err := s.OpenRuns(context.Background(), 0, t0.Add(time.Hour), 100)
	if err == nil || len(open) != 5 || open[0].RunID != "run-00" || open[4].RunID != "run-04" {
		t.Fatalf("open = %v, %v; want the first page and an error", open, err)
	}
}
