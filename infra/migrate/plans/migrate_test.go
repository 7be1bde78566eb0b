package main

import (
	"context"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

var tables = store.Tables{State: "state", Runs: "runs"}

// t0 is when the old code set the plans; later times are later writes.
var t0 = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)

type fixture struct {
	db *dynamodb.Client
	st *store.Dynamo
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	db := srv.Client()
	st, err := store.New(store.Config{DB: db, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{db: db, st: st}
}

// putOld writes a plan as the code before PLAN# did (shared/store's
// SetPlan at USER#<id>, PLAN).
func (f *fixture) putOld(t *testing.T, user string, p turns.Plan, at time.Time) {
	t.Helper()
	f.put(t, tablekeys.LegacyPlan(user), map[string]types.AttributeValue{
		"plan": str(string(p)), "userId": str(user), attrUpdatedAt: str(at.UTC().Format(time.RFC3339Nano)),
	})
}

func (f *fixture) put(t *testing.T, k tablekeys.Key, attrs map[string]types.AttributeValue) {
	t.Helper()
	if _, err := f.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(tables.State), Item: withKey(attrs, key(k))}); err != nil {
		t.Fatal(err)
	}
}

// plan is the plan the turn function reads (the store, at the new key).
func (f *fixture) plan(t *testing.T, user string) turns.Plan {
	t.Helper()
	p, err := f.st.GetPlan(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) exists(t *testing.T, k tablekeys.Key) bool {
	t.Helper()
	out, err := f.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(tables.State), Key: key(k), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Item) > 0
}

// dump is the whole state table, each item printed, sorted.
func (f *fixture) dump(t *testing.T) []string {
	t.Helper()
	var out []string
	for p := dynamodb.NewScanPaginator(f.db, &dynamodb.ScanInput{TableName: aws.String(tables.State), ConsistentRead: aws.Bool(true)}); p.HasMorePages(); {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, item := range page.Items {
			names := make([]string, 0, len(item))
			for n := range item {
				names = append(names, n)
			}
			sort.Strings(names)
			var b strings.Builder
			for _, n := range names {
				fmt.Fprintf(&b, "%s=%v ", n, item[n].(*types.AttributeValueMemberS).Value)
			}
			out = append(out, b.String())
		}
	}
	sort.Strings(out)
	return out
}

func (f *fixture) migrate(t *testing.T, db DB, o Options) Counts {
	t.Helper()
	o.Table = tables.State
	c, err := Migrate(context.Background(), db, o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestMigrateMovesEveryPlanOnce: every plan at the old key, over several
// Scan pages, moves to the new key, where the store reads it; nothing
// else of the table changes (a user's days and ledgers, installs, a plan
// already at the new key); and a second run finds nothing and changes
// nothing.
func TestMigrateMovesEveryPlanOnce(t *testing.T) {
	f := newFixture(t)
	const n = 23
	want := map[string]turns.Plan{}
	for i := range n {
		user := fmt.Sprintf("u%02d", i)
		want[user] = turns.PlanFree
		if i%3 != 0 {
			want[user] = turns.PlanPro
		}
		f.putOld(t, user, want[user], t0.Add(time.Duration(i)*time.Second))
		f.put(t, tablekeys.UsageOnDay(user, "2026-12-03"), map[string]types.AttributeValue{"turns": str("4")})
		f.put(t, tablekeys.Ledger(user, "2026-12-03"), map[string]types.AttributeValue{"rev": str("2")})
	}
	f.put(t, tablekeys.Install("PLAN"), map[string]types.AttributeValue{"ownerUserId": str("u01")})
	// A user whose plan is at the new key only (set after the deploy).
	if err := f.st.SetPlan(context.Background(), "fresh", turns.PlanPro, t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	before := f.dump(t)

	got := f.migrate(t, f.db, Options{PageSize: 7})
	if w := (Counts{Found: n, Copied: n, Deleted: n}); got != w {
		t.Fatalf("first run: %v, want %v", got, w)
	}
	for user, p := range want {
		if g := f.plan(t, user); g != p {
			t.Errorf("%s: plan %q at the new key, want %q", user, g, p)
		}
		if f.exists(t, tablekeys.LegacyPlan(user)) {
			t.Errorf("%s: the old item is still there", user)
		}
	}
	if f.plan(t, "fresh") != turns.PlanPro {
		t.Error("the plan already at the new key changed")
	}
	// Every other item is as it was; each plan moved with all its attributes.
	after := f.dump(t)
	var moved []string
	for _, s := range before {
		moved = append(moved, strings.Replace(s, "pk=USER#", "pk=PLAN#", 1))
	}
	for i, s := range moved {
		if !strings.Contains(s, "sk=PLAN") {
			moved[i] = before[i]
		}
	}
	sort.Strings(moved)
	if !reflect.DeepEqual(after, moved) {
		t.Errorf("the table after the run:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(moved, "\n"))
	}

	if again := f.migrate(t, f.db, Options{PageSize: 7}); again != (Counts{}) {
		t.Errorf("second run: %v, want nothing found", again)
	}
	if again := f.dump(t); !reflect.DeepEqual(again, after) {
		t.Errorf("the second run changed the table:\n%s", strings.Join(again, "\n"))
	}
}

// TestMigrateTheLaterPlanWins: a plan set at the new key after the old
// one (the set-plan route between the deploy and the run) stays; a new
// key older than the old item (copied before the deploy, then set again
// by the code still deployed) is overwritten; either way the old item
// goes.
func TestMigrateTheLaterPlanWins(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.putOld(t, "upgraded-meanwhile", turns.PlanFree, t0)
	if err := f.st.SetPlan(ctx, "upgraded-meanwhile", turns.PlanPro, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	f.putOld(t, "downgraded-before", turns.PlanPro, t0)
	if c := f.migrate(t, f.db, Options{KeepOld: true}); c != (Counts{Found: 2, Copied: 1, Kept: 1}) {
		t.Fatalf("copy: %v", c)
	}
	f.putOld(t, "downgraded-before", turns.PlanFree, t0.Add(time.Minute)) // the old code, after the copy
	f.putOld(t, "same-time", turns.PlanFree, t0)
	if err := f.st.SetPlan(ctx, "same-time", turns.PlanPro, t0); err != nil {
		t.Fatal(err)
	}

	if c := f.migrate(t, f.db, Options{}); c != (Counts{Found: 3, Copied: 1, Kept: 2, Deleted: 3}) {
		t.Fatalf("move: %v", c)
	}
	for user, want := range map[string]turns.Plan{"upgraded-meanwhile": turns.PlanPro, "downgraded-before": turns.PlanFree, "same-time": turns.PlanPro} {
		if got := f.plan(t, user); got != want {
			t.Errorf("%s: %q, want %q", user, got, want)
		}
		if f.exists(t, tablekeys.LegacyPlan(user)) {
			t.Errorf("%s: the old item is still there", user)
		}
	}
}

// TestMigrateKeepOldCopiesOnly: KEEP_OLD=1 (before a deploy) copies and
// deletes nothing, so the code still deployed keeps reading the old key;
// the run after the deploy deletes the old items, and copies nothing again.
func TestMigrateKeepOldCopiesOnly(t *testing.T) {
	f := newFixture(t)
	for _, u := range []string{"a", "b", "c"} {
		f.putOld(t, u, turns.PlanPro, t0)
	}
	if c := f.migrate(t, f.db, Options{KeepOld: true}); c != (Counts{Found: 3, Copied: 3}) {
		t.Fatalf("copy: %v", c)
	}
	if c := f.migrate(t, f.db, Options{KeepOld: true}); c != (Counts{Found: 3, Kept: 3}) {
		t.Fatalf("copy again: %v", c)
	}
	for _, u := range []string{"a", "b", "c"} {
		if !f.exists(t, tablekeys.LegacyPlan(u)) || f.plan(t, u) != turns.PlanPro {
			t.Errorf("%s: want the plan at both keys", u)
		}
	}
	if c := f.migrate(t, f.db, Options{}); c != (Counts{Found: 3, Kept: 3, Deleted: 3}) {
		t.Fatalf("move: %v", c)
	}
	for _, u := range []string{"a", "b", "c"} {
		if f.exists(t, tablekeys.LegacyPlan(u)) || f.plan(t, u) != turns.PlanPro {
			t.Errorf("%s: want the plan at the new key only", u)
		}
	}
}

// racing is the real client, with writes of others slipped in before the
// migration's own: a set-plan at the old key just before the first
// delete (the code still deployed), and a transaction holding the new
// key at the first put (an admission's check of the plan), which DynamoDB
// refuses with TransactionConflict.
type racing struct {
	*dynamodb.Client
	before func()
	puts   atomic.Int32
}

func (r *racing) PutItem(ctx context.Context, in *dynamodb.PutItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	if r.puts.Add(1) == 1 {
		return nil, &types.TransactionConflictException{Message: aws.String("Transaction is ongoing for the item")}
	}
	return r.Client.PutItem(ctx, in, opts...)
}

func (r *racing) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, opts ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	if r.before != nil {
		r.before()
		r.before = nil
	}
	return r.Client.DeleteItem(ctx, in, opts...)
}

// TestMigrateAPlanSetDuringTheRun: the old item changed between the copy
// and its delete, so the delete's condition fails and the plan is copied
// again: the later plan ends at the new key, and none is lost.
func TestMigrateAPlanSetDuringTheRun(t *testing.T) {
	f := newFixture(t)
	f.putOld(t, "u1", turns.PlanFree, t0)
	db := &racing{Client: f.db, before: func() { f.putOld(t, "u1", turns.PlanPro, t0.Add(time.Second)) }}
	if c := f.migrate(t, db, Options{}); c != (Counts{Found: 1, Copied: 1, Deleted: 1}) {
		t.Fatalf("move: %v", c)
	}
	if got := f.plan(t, "u1"); got != turns.PlanPro {
		t.Errorf("plan %q, want the one set during the run", got)
	}
	if f.exists(t, tablekeys.LegacyPlan("u1")) {
		t.Error("the old item is still there")
	}
	if db.puts.Load() < 3 {
		t.Errorf("%d puts: want the refused one retried and the plan copied again", db.puts.Load())
	}
}
