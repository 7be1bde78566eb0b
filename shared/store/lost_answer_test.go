package store_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// A write that DynamoDB applied but whose response never arrived: the
// SDK sends it again (a connection reset is retryable for every
// operation), and a conditional write's retry is refused by its own
// effect. Every conditional write of a run recognises its own earlier
// success and goes on.

// cutAnswers lets every request through to the server and, for the next
// requests of one operation it is armed for, throws the answer away and
// reports a reset connection, as a network that dropped the response
// would.
type cutAnswers struct {
	next http.RoundTripper
	mu   sync.Mutex
	op   string // X-Amz-Target's operation, e.g. "UpdateItem"
	left int
	cut  int // answers thrown away so far
}

func (c *cutAnswers) arm(op string, n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.op, c.left = op, n
}

func (c *cutAnswers) cuts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cut
}

func (c *cutAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	c.mu.Lock()
	cut := c.left > 0 && strings.HasSuffix(req.Header.Get("X-Amz-Target"), "."+c.op)
	if cut {
		c.left--
		c.cut++
	}
	c.mu.Unlock()
	if !cut {
		return resp, nil
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return nil, &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET} // as a reset connection fails; the SDK retries it
}

// lossyStore is a store whose client's answers c can cut, and the raw
// client to read the tables with.
func lossyStore(t *testing.T) (*store.Dynamo, *cutAnswers, *dynamodb.Client) {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", tables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	c := &cutAnswers{next: http.DefaultTransport.(*http.Transport).Clone()}
	client := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = &http.Client{Transport: c} })
	s, err := store.New(store.Config{DB: client, Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	return s, c, srv.Client()
}

func TestEveryConditionalWriteOfARunSurvivesItsLostAnswer(t *testing.T) {
	s, cut, _ := lossyStore(t)
	ctx := context.Background()

	// The admission: a transaction, which DynamoDB runs once for its
	// ClientRequestToken, repeated by the SDK's retry.
	cut.arm("TransactWriteItems", 1)
	run := newRun("r1", "u1", now)
	run.MaxAttempts = turns.DefaultMaxAttempts
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatalf("admission with its answer lost: %+v, %v", res, err)
	}
	if u := usageOf(t, s, "u1"); u.Turns != 1 {
		t.Fatalf("the day counts %d turns after one admission", u.Turns)
	}

	// The claim (issue 34's reproduction): the run is the claimer's, not
	// held by nobody.
	cut.arm("UpdateItem", 1)
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil || claimed.Status != runs.StatusRunning || claimed.Attempts != 1 {
		t.Fatalf("claim with its answer lost: %+v, %v", claimed, err)
	}

	// A heartbeat, an events flush, a checkpoint alone and with journal
	// entries: each succeeds as its retry is applied again.
	lease := claimed.Lease
	lease.UntilMs = now.Add(turns.LeaseDuration + time.Second).UnixMilli()
	cut.arm("UpdateItem", 1)
	if err := s.RenewLease(ctx, "r1", claimed.Attempts, lease); err != nil {
		t.Fatalf("heartbeat with its answer lost: %v", err)
	}
	cut.arm("UpdateItem", 1)
	if err := s.SaveRunEvents(ctx, "r1", claimed.Attempts, lease, []runs.StoredEvent{{ID: 1, Type: runs.EventRunStarted, Data: `{"type":"run.started","id":1,"at":"2026-12-02T23:59:59Z","engine":"native"}`}}); err != nil {
		t.Fatalf("events flush with its answer lost: %v", err)
	}
	cut.arm("PutItem", 1)
	claimed.AddCost(runs.Cost{ModelMicros: 10})
	if err := s.CheckpointRun(ctx, claimed, nil); err != nil {
		t.Fatalf("checkpoint with its answer lost: %v", err)
	}
	cut.arm("TransactWriteItems", 1)
	journal := []turns.JournalEntry{{Seq: 0, Data: `{"kind":"open"}`}, {Seq: 1, Data: `{"kind":"final","content":"x"}`}}
	if err := s.CheckpointRun(ctx, claimed, journal); err != nil {
		t.Fatalf("checkpoint with entries with its answer lost: %v", err)
	}
	if got, err := s.ReadJournal(ctx, "r1"); err != nil || len(got) != 2 || got[1].Data != journal[1].Data {
		t.Fatalf("journal %+v, %v", got, err)
	}

	// The final write: a PutItem, whose retry finds the run final with
	// its own token on it.
	cut.arm("PutItem", 1)
	claimed.End(runs.StatusSucceeded, "", "", now.Add(time.Second))
	if err := s.FinishRun(ctx, claimed, false); err != nil {
		t.Fatalf("final write with its answer lost: %v", err)
	}
	if got, err := s.GetRun(ctx, "r1"); err != nil || got.Status != runs.StatusSucceeded || got.CostMicros != 10 {
		t.Fatalf("run after the final write: %+v, %v", got, err)
	}
	// Someone else's final write is still refused.
	again := *claimed
	if err := s.FinishRun(ctx, &again, false); !errors.Is(err, turns.ErrAlreadyFinal) {
		t.Fatalf("a second final write: %v", err)
	}
	if n := cut.cuts(); n != 7 {
		t.Errorf("%d answers cut, want 7", n)
	}
}

// Under a spend cap the final write settles the reservation in a
// transaction: its lost answer settles it once; a refund gives the turn
// back once.
func TestSettleSurvivesItsLostAnswer(t *testing.T) {
	s, cut, _ := lossyStore(t)
	ctx := context.Background()
	r := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, capped(r, 10_000, 400, 100)); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil {
		t.Fatal(err)
	}
	claimed.AddCost(runs.Cost{ModelMicros: 123})
	claimed.End(runs.StatusFailed, runs.ErrLLM, "x", now)
	cut.arm("TransactWriteItems", 1)
	if err := s.FinishRun(ctx, claimed, true); err != nil {
		t.Fatalf("settling final write with its answer lost: %v", err)
	}
	if u := usageOf(t, s, "u1"); u.ReservedMicros != 0 || u.CapCommittedMicros != 123 || u.Turns != 0 {
		t.Fatalf("day after one settle: %+v", u)
	}
	if cut.cuts() != 1 {
		t.Errorf("%d answers cut", cut.cuts())
	}
}

// The reaper's close is the same final write, with the reaper's own
// token: its lost answer is a close, not "closed by another writer".
func TestReapersCloseSurvivesItsLostAnswer(t *testing.T) {
	s, cut, _ := lossyStore(t)
	ctx := context.Background()
	clock := now
	run := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	if _, err := s.ClaimRun(ctx, "r1", now); err != nil {
		t.Fatal(err)
	}
	rc, err := turns.NewReclaimer(turns.ReclaimerConfig{Store: s, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	clock = now.Add(turns.RunMaxLife + time.Second)
	cut.arm("TransactWriteItems", 1) // refunded: a transaction
	got, err := rc.Interrupt(ctx, "r1")
	if err != nil || !got.Closed || !got.Refunded {
		t.Fatalf("the reaper's close with its answer lost: %+v, %v", got, err)
	}
	if u := usageOf(t, s, "u1"); u.Turns != 0 {
		t.Fatalf("refunded %d times", 1-u.Turns)
	}
}

// Two workers race for one queued run: exactly one claims it. A worker
// that wakes after another took its run over (its lease lapsed) finds
// every write refused as the run's newer attempt's, and the run's record
// unchanged by it.
func TestRacingWorkersAndALateOne(t *testing.T) {
	s := newStore(t)
	ctx := context.Background()
	run := newRun("r1", "u1", now)
	run.MaxAttempts = turns.DefaultMaxAttempts
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	var wg sync.WaitGroup
	claims := make([]*runs.Run, 2)
	errs := make([]error, 2)
	for i := range claims {
		wg.Add(1)
		go func() { defer wg.Done(); claims[i], errs[i] = s.ClaimRun(ctx, "r1", now) }()
	}
	wg.Wait()
	won := 0
	for i := range claims {
		if errs[i] == nil {
			won++
		} else if !errors.Is(errs[i], turns.ErrNotClaimable) {
			t.Fatal(errs[i])
		}
	}
	if won != 1 {
		t.Fatalf("%d of two racing claims won", won)
	}
	late := claims[0]
	if errs[0] != nil {
		late = claims[1]
	}
	// Within the lease, no takeover.
	if _, err := s.ClaimRun(ctx, "r1", now.Add(turns.LeaseDuration)); !errors.Is(err, turns.ErrNotClaimable) {
		t.Fatalf("a claim within the lease: %v", err)
	}
	taken, err := s.ClaimRun(ctx, "r1", now.Add(turns.LeaseDuration+time.Millisecond))
	if err != nil || taken.Attempts != 2 || taken.Lease.WrittenBy != 1 || taken.Lease.PrevUntilMs != late.Lease.UntilMs {
		t.Fatalf("takeover: %+v, %v", taken, err)
	}
	late.AddCost(runs.Cost{ModelMicros: 999})
	if err := s.CheckpointRun(ctx, late, nil); !errors.Is(err, turns.ErrLeaseLost) {
		t.Errorf("the late worker's checkpoint: %v", err)
	}
	if err := s.SaveRunEvents(ctx, "r1", late.Attempts, late.Lease, nil); !errors.Is(err, turns.ErrLeaseLost) {
		t.Errorf("the late worker's events: %v", err)
	}
	if err := s.RenewLease(ctx, "r1", late.Attempts, late.Lease); !errors.Is(err, turns.ErrLeaseLost) {
		t.Errorf("the late worker's heartbeat: %v", err)
	}
	late.End(runs.StatusSucceeded, "", "", now)
	if err := s.FinishRun(ctx, late, false); !errors.Is(err, turns.ErrLeaseLost) {
		t.Errorf("the late worker's final write: %v", err)
	}
	if got, err := s.GetRun(ctx, "r1"); err != nil || got.Status != runs.StatusRunning || got.CostMicros != 0 || got.Attempts != 2 {
		t.Fatalf("run after the late worker: %+v, %v", got, err)
	}
	// Past its attempts, a lapsed run is not taken over: its closer ends it.
	for range turns.DefaultMaxAttempts - 2 {
		taken, err = s.ClaimRun(ctx, "r1", time.UnixMilli(taken.Lease.UntilMs).Add(time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
	}
	cur, err := s.ClaimRun(ctx, "r1", time.UnixMilli(taken.Lease.UntilMs).Add(time.Millisecond))
	if !errors.Is(err, turns.ErrNotClaimable) || cur.Attempts != turns.DefaultMaxAttempts {
		t.Fatalf("a claim past the attempts: %+v, %v", cur, err)
	}
}

// The journal lives in the state table, a key range of its own, one item
// per entry, and expires a day after its run's admission; the runs
// table (the alarm's stream) never sees it.
func TestJournalEntriesAreItemsOfTheirOwn(t *testing.T) {
	s, _, raw := lossyStore(t)
	ctx := context.Background()
	run := newRun("r1", "u1", now)
	if res, err := s.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: run, Limit: 30, Now: now}); err != nil || !res.Admitted {
		t.Fatal(res, err)
	}
	claimed, err := s.ClaimRun(ctx, "r1", now)
	if err != nil {
		t.Fatal(err)
	}
	big := strings.Repeat("x", 100_000)
	for seq := range 3 {
		if err := s.CheckpointRun(ctx, claimed, []turns.JournalEntry{{Seq: seq, Data: big}}); err != nil {
			t.Fatal(err)
		}
	}
	out, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.State), Key: map[string]types.AttributeValue{
		tablekeys.PK: &types.AttributeValueMemberS{Value: tablekeys.JournalPartition("r1")}, tablekeys.SK: &types.AttributeValueMemberS{Value: tablekeys.JournalEntrySort(2)},
	}})
	if err != nil || len(out.Item) == 0 {
		t.Fatalf("entry 2: %v", err)
	}
	if ttl := out.Item[tablekeys.TTL].(*types.AttributeValueMemberN).Value; ttl != "1796342399" {
		t.Errorf("entry's ttl %s, want a day after the admission", ttl)
	}
	runItem, err := raw.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(tables.Runs), Key: map[string]types.AttributeValue{tablekeys.RunID: &types.AttributeValueMemberS{Value: "r1"}}})
	if err != nil || dynamodblocal.ItemSize(runItem.Item) > 10_000 {
		t.Fatalf("the run item holds %d bytes: the journal is not on it", dynamodblocal.ItemSize(runItem.Item))
	}
	got, err := s.ReadJournal(ctx, "r1")
	if err != nil || len(got) != 3 {
		t.Fatalf("journal of %d entries, %v", len(got), err)
	}
}
