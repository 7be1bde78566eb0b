package handler_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/store"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
	"github.com/commonly/runtime/shared/utcday"
)

var update = flag.Bool("update", false, "rewrite testdata/*.json from the store's images")

// The stream event files are what Lambda would deliver from the runs
// table: every image is a run as the store wrote it (admission, claim,
// checkpoints, final write), read back from the embedded DynamoDB, in the
// SAM/Lambda DynamoDB event shape. They are regenerated here and must
// match; `go test ./functions/alarm/handler -run TestEventFiles -update`
// rewrites them after a change to the run record.
func TestEventFiles(t *testing.T) {
	files := streamFiles(t)
	for _, f := range files {
		b, err := json.MarshalIndent(events.DynamoDBEvent{Records: f.records}, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		b = append(b, '\n')
		path := filepath.Join("..", "testdata", f.name)
		if *update {
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to write it)", err)
		}
		if !bytes.Equal(got, b) {
			t.Errorf("%s is not what the store writes today; rerun with -update", f.name)
		}
	}
}

type streamFile struct {
	name    string
	records []events.DynamoDBEventRecord
}

// The scenarios' fixed facts, shared with the tests.
const (
	day1 = "2026-12-02"
	day2 = "2026-12-03"
)

// streamFiles runs the scenarios against a fresh store, in order: one
// shard's sequence numbers grow across the files, so replaying files in
// this order is replaying the shard.
func streamFiles(t *testing.T) []streamFile {
	t.Helper()
	s := newStream(t)
	at := func(d string, hms string) time.Time {
		tm, err := time.Parse(time.RFC3339Nano, d+"T"+hms+"Z")
		if err != nil {
			t.Fatal(err)
		}
		return tm
	}
	var files []streamFile
	add := func(name string, recs ...[]events.DynamoDBEventRecord) {
		var all []events.DynamoDBEventRecord
		for _, r := range recs {
			all = append(all, r...)
		}
		files = append(files, streamFile{name, all})
	}
	// alice's first native turn: two model steps, $0.60 then $1.40.
	add("native-turn.json", s.turn(turnSpec{run: "run_alice1", user: "alice", engine: "native", admitted: at(day1, "10:00:00"), steps: []money.Micros{600_000, 800_000}}))
	// alice's second turn, $0.70: her day reaches $2.10.
	add("second-turn.json", s.turn(turnSpec{run: "run_alice2", user: "alice", engine: "native", admitted: at(day1, "10:05:00"), steps: []money.Micros{700_000}}))
	// An operator's fix after reconciling with LiteLLM's spend log: alice's
	// first run cost $1.15, not $1.40.
	add("cost-correction.json", s.correct("run_alice1", 1_150_000, at(day1, "12:00:00")))
	// bob's turn on the Durable Object fallback, $0.35.
	add("fallback-turn.json", s.turn(turnSpec{run: "run_bob1", user: "bob", engine: "durable-object", admitted: at(day1, "11:00:00"), steps: []money.Micros{350_000}}))
	// erin and frank, each on both days, in one batch.
	add("two-users-two-days.json",
		s.turn(turnSpec{run: "run_erin1", user: "erin", engine: "native", admitted: at(day1, "23:10:00"), steps: []money.Micros{100_000}}),
		s.turn(turnSpec{run: "run_frank1", user: "frank", engine: "native", admitted: at(day1, "23:20:00"), steps: []money.Micros{200_000}}),
		s.turn(turnSpec{run: "run_erin2", user: "erin", engine: "native", admitted: at(day2, "00:10:00"), steps: []money.Micros{300_000, 100_000}}),
		s.turn(turnSpec{run: "run_frank2", user: "frank", engine: "durable-object", admitted: at(day2, "00:20:00"), steps: []money.Micros{500_000}}))
	// grace's three $0.90 turns: the $2 threshold is crossed by the third's
	// final write, inside the batch.
	add("crossing-in-batch.json",
		s.turn(turnSpec{run: "run_grace1", user: "grace", engine: "native", admitted: at(day1, "14:00:00"), steps: []money.Micros{900_000}}),
		s.turn(turnSpec{run: "run_grace2", user: "grace", engine: "native", admitted: at(day1, "14:10:00"), steps: []money.Micros{900_000}}),
		s.turn(turnSpec{run: "run_grace3", user: "grace", engine: "native", admitted: at(day1, "14:20:00"), steps: []money.Micros{900_000}}))
	// heidi's turn admitted at 23:59:59.9; its checkpoint and final write
	// (and their stream records) come after midnight.
	add("midnight.json", s.turn(turnSpec{run: "run_heidi1", user: "heidi", engine: "native", admitted: at(day1, "23:59:59.9"), steps: []money.Micros{250_000, 150_000},
		stepGap: 2 * time.Second}))
	// A record whose image lost its userId and day, then judy's good turn.
	bad := s.turn(turnSpec{run: "run_ivan1", user: "ivan", engine: "native", admitted: at(day1, "15:00:00"), steps: []money.Micros{400_000}})
	spoiled := bad[len(bad)-1]
	delete(spoiled.Change.NewImage, "userId")
	delete(spoiled.Change.NewImage, "day")
	add("malformed.json", []events.DynamoDBEventRecord{spoiled},
		s.turn(turnSpec{run: "run_judy1", user: "judy", engine: "native", admitted: at(day1, "15:01:00"), steps: []money.Micros{100_000}}))
	// DynamoDB's TTL deletes alice's first run 90 days after its day.
	add("ttl-remove.json", s.expire("run_alice1"))
	return files
}

// stream writes runs through the store and records what the runs
// table's stream would carry.
type stream struct {
	t    *testing.T
	db   *dynamodb.Client
	st   *store.Dynamo
	seq  *big.Int
	last map[string]map[string]types.AttributeValue
}

var streamTables = store.Tables{State: "gen-state", Runs: "commonly-runs"}

func newStream(t *testing.T) *stream {
	t.Helper()
	srv, err := dynamodblocal.StartWithTables(context.Background(), "127.0.0.1:0", streamTables)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// 21 digits, becoming 22 after three records: sequence numbers are
	// integers, and a string comparison would get the fourth wrong.
	seq, _ := new(big.Int).SetString("999999999997000000000", 10)
	db := srv.Client()
	st, err := store.New(store.Config{DB: db, Tables: streamTables})
	if err != nil {
		t.Fatal(err)
	}
	return &stream{t: t, db: db, st: st, seq: seq, last: map[string]map[string]types.AttributeValue{}}
}

type turnSpec struct {
	run, user, engine string
	admitted          time.Time
	// steps are the model steps' costs; the run is checkpointed after
	// each but the last (native), then finished.
	steps   []money.Micros
	stepGap time.Duration // default 1.5 s
}

// turn admits, claims, checkpoints and finishes a run as the turn
// function does, and returns the stream records of those writes.
func (s *stream) turn(sp turnSpec) []events.DynamoDBEventRecord {
	t, ctx := s.t, context.Background()
	gap := sp.stepGap
	if gap == 0 {
		gap = 1500 * time.Millisecond
	}
	r := &runs.Run{RunID: sp.run, InstallID: "inst_" + sp.user, UserID: sp.user, PodID: "pod_" + sp.user, AgentName: "helper", InstanceID: "default",
		Engine: sp.engine, Trigger: "user", Message: "What is the sum of the squares of 1 to 10?", Day: utcday.Of(sp.admitted),
		Status: runs.StatusQueued, CreatedAt: sp.admitted, Steps: []runs.Step{}, RequestHash: "h_" + sp.run}
	var out []events.DynamoDBEventRecord
	if res, err := s.st.Admit(ctx, turns.Admission{Plan: turns.PlanFree, Run: r, Limit: 30, Now: sp.admitted}); err != nil || !res.Admitted {
		t.Fatalf("admit %s: %+v %v", sp.run, res, err)
	}
	out = append(out, s.record(sp.run, sp.admitted))
	at := sp.admitted.Add(40 * time.Millisecond)
	claimed, err := s.st.ClaimRun(ctx, sp.run, at)
	if err != nil {
		t.Fatalf("claim %s: %v", sp.run, err)
	}
	out = append(out, s.record(sp.run, at))
	for i, c := range sp.steps {
		at = at.Add(gap)
		claimed.Steps = append(claimed.Steps, runs.Step{Index: i, Model: "deepseek-v4-flash", CallID: "call_" + sp.run + "_" + string(rune('a'+i)),
			PromptTokens: 1800, CachedPromptTokens: 1024, CompletionTokens: 240, FinishReason: "stop", ElapsedMs: 1400, CostMicros: c})
		claimed.Tokens.Add(1800, 1024, 240)
		claimed.AddCost(runs.Cost{ModelMicros: c})
		claimed.Cost.PriceVersion = "2026-09-14.1"
		if i < len(sp.steps)-1 && sp.engine == "native" {
			if err := s.st.CheckpointRun(ctx, claimed, nil); err != nil {
				t.Fatalf("checkpoint %s: %v", sp.run, err)
			}
			out = append(out, s.record(sp.run, at))
		}
	}
	claimed.FinalMessage = "385"
	claimed.PostedToPod = true
	claimed.End(runs.StatusSucceeded, "", "", at)
	if err := s.st.FinishRun(ctx, claimed, false); err != nil {
		t.Fatalf("finish %s: %v", sp.run, err)
	}
	return append(out, s.record(sp.run, at))
}

// correct rewrites a finished run's cost, as an operator's fix would.
func (s *stream) correct(runID string, cost money.Micros, at time.Time) []events.DynamoDBEventRecord {
	var r runs.Run
	if err := attributevalue.UnmarshalMap(s.last[runID], &r); err != nil {
		s.t.Fatal(err)
	}
	r.Cost = runs.Cost{PriceVersion: r.Cost.PriceVersion}
	r.AddCost(runs.Cost{ModelMicros: cost})
	item, err := attributevalue.MarshalMap(&r)
	if err != nil {
		s.t.Fatal(err)
	}
	item[tablekeys.TTL] = s.last[runID][tablekeys.TTL]
	if _, err := s.db.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String(streamTables.Runs), Item: item}); err != nil {
		s.t.Fatal(err)
	}
	return []events.DynamoDBEventRecord{s.record(runID, at)}
}

// expire is the REMOVE record of DynamoDB's TTL deleting a run.
func (s *stream) expire(runID string) []events.DynamoDBEventRecord {
	old := s.last[runID]
	ttl, _ := old[tablekeys.TTL].(*types.AttributeValueMemberN)
	var sec int64
	_ = attributevalue.Unmarshal(ttl, &sec)
	if _, err := s.db.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{TableName: aws.String(streamTables.Runs), Key: map[string]types.AttributeValue{tablekeys.RunID: old[tablekeys.RunID]}}); err != nil {
		s.t.Fatal(err)
	}
	rec := s.envelope("REMOVE", runID, time.Unix(sec, 0).Add(17*time.Minute), nil, old)
	rec.UserIdentity = &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"}
	delete(s.last, runID)
	return []events.DynamoDBEventRecord{rec}
}

// record reads the run back and makes the stream record of its last write.
func (s *stream) record(runID string, at time.Time) events.DynamoDBEventRecord {
	out, err := s.db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(streamTables.Runs),
		Key: map[string]types.AttributeValue{tablekeys.RunID: &types.AttributeValueMemberS{Value: runID}}, ConsistentRead: aws.Bool(true)})
	if err != nil || len(out.Item) == 0 {
		s.t.Fatalf("read %s: %v", runID, err)
	}
	// A claim's and a final write's tokens are random: fixed in the files.
	for _, name := range []string{"leaseToken", "closer"} {
		if _, ok := out.Item[name]; ok {
			out.Item[name] = &types.AttributeValueMemberS{Value: name + "-of-" + runID}
		}
	}
	op := "MODIFY"
	old := s.last[runID]
	if old == nil {
		op = "INSERT"
	}
	s.last[runID] = out.Item
	return s.envelope(op, runID, at, out.Item, old)
}

func (s *stream) envelope(op, runID string, at time.Time, newImage, oldImage map[string]types.AttributeValue) events.DynamoDBEventRecord {
	seq := s.seq.String()
	s.seq.Add(s.seq, big.NewInt(1_000_000_000))
	id := sha256.Sum256([]byte(seq))
	rec := events.DynamoDBEventRecord{
		AWSRegion: "us-east-1", EventID: hex.EncodeToString(id[:16]), EventName: op, EventSource: "aws:dynamodb", EventVersion: "1.1",
		EventSourceArn: "arn:aws:dynamodb:us-east-1:123456789012:table/commonly-runs/stream/2026-11-30T09:00:00.000",
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at.Truncate(time.Second)},
			Keys:                        map[string]events.DynamoDBAttributeValue{tablekeys.RunID: events.NewStringAttribute(runID)},
			NewImage:                    toEvent(newImage), OldImage: toEvent(oldImage),
			SequenceNumber: seq, StreamViewType: "NEW_AND_OLD_IMAGES",
		},
	}
	size, _ := json.Marshal(rec.Change)
	rec.Change.SizeBytes = int64(len(size))
	return rec
}

func toEvent(item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if item == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		out[k] = toEventValue(v)
	}
	return out
}

func toEventValue(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			l[i] = toEventValue(e)
		}
		return events.NewListAttribute(l)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(toEvent(v.Value))
	}
	panic("unknown attribute value type")
}
