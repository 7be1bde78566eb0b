package load

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/sandbox/e2b"
	"github.com/commonly/runtime/shared/sandbox/e2b/e2btest"
	"github.com/commonly/runtime/shared/tools"
)

// stallTool is the tool an abandoning turn calls (Stall): it blocks,
// whatever its context says, until release, as a worker whose Lambda was
// stopped mid-turn makes no further write. Released at the end, the late
// worker's final write meets a run the reaper already closed.
type stallTool struct {
	released chan struct{}
	once     sync.Once
	calls    atomic.Int64
}

func newStallTool() *stallTool { return &stallTool{released: make(chan struct{})} }

// Spec implements tools.Tool.
func (*stallTool) Spec() llm.ToolSpec {
	return llm.ToolSpec{
		Name:        Stall,
		Description: "Stands for a worker stopped mid-turn: never returns while the load runs.",
		Parameters:  map[string]any{"type": "object", "properties": map[string]any{}, "additionalProperties": false},
	}
}

// Call implements tools.Tool.
func (s *stallTool) Call(context.Context, tools.Env, json.RawMessage) tools.Result {
	s.calls.Add(1)
	<-s.released
	return tools.Errorf("the worker was stopped")
}

func (s *stallTool) release() { s.once.Do(func() { close(s.released) }) }

var _ tools.Tool = (*stallTool)(nil)

// streamFaults delivers some of the runs stream's batches to the alarm
// function two or three times, as Lambda does when an invocation's
// answer is lost: the ledger must count each run once.
type streamFaults struct {
	rate   float64
	handle func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)

	batches     atomic.Int64
	redelivered atomic.Int64 // batches delivered more than once
	extra       atomic.Int64 // deliveries beyond the first

	mu sync.Mutex
	// closed are the runs whose final record the alarm function has taken
	// (a batch answered without failures), for the wait at the end.
	closed map[string]bool
}

// taken records the final runs of a batch the handler took, up to its
// first failed record.
func (s *streamFaults) taken(ev events.DynamoDBEvent, failed []events.DynamoDBBatchItemFailure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed == nil {
		s.closed = map[string]bool{}
	}
	bad := map[string]bool{}
	for _, f := range failed {
		bad[f.ItemIdentifier] = true
	}
	for _, r := range ev.Records {
		if bad[r.Change.SequenceNumber] {
			return
		}
		img := r.Change.NewImage
		st, id := img["status"], img["runId"]
		if st.DataType() == events.DataTypeString && id.DataType() == events.DataTypeString && runs.Status(st.String()).Final() {
			s.closed[id.String()] = true
		}
	}
}

// closedRuns is how many runs' final records the alarm function took.
func (s *streamFaults) closedRuns() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.closed)
}

// wrap is the fault around the alarm function's handler (localstack.Faults.Stream).
func (s *streamFaults) wrap(h localstack.StreamHandler) localstack.StreamHandler {
	s.handle = h
	return s.invoke
}

func (s *streamFaults) invoke(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	s.batches.Add(1)
	times := 1
	if s.rate > 0 && rand.Float64() < s.rate {
		times = 2 + rand.IntN(2)
		s.redelivered.Add(1)
		s.extra.Add(int64(times - 1))
	}
	var resp events.DynamoDBEventResponse
	var err error
	for range times {
		if resp, err = s.handle(ctx, ev); err != nil || len(resp.BatchItemFailures) > 0 {
			break
		}
	}
	if err == nil {
		// The records before the first failure are done; the mapping
		// retries the batch from it.
		s.taken(ev, resp.BatchItemFailures)
	}
	return resp, err
}

// busFaults makes the alarm function's EventBridge puts fail, then
// succeed: each time it is armed, every attempt of the next PutEvents
// call fails (the SDK's three), so the alarm reports the batch failed and
// the event source mapping retries it.
type busFaults struct {
	mu      sync.Mutex
	armedAt int
	arms    int
}

// sdkAttempts is the SDK's default number of attempts of one call.
const sdkAttempts = 3

type failingBus interface {
	Requests() int
	FailRequests(int)
}

// tick arms a failure once the previous one has been met and a call
// after it succeeded.
func (b *busFaults) tick(bus failingBus) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arms > 0 && bus.Requests() < b.armedAt+sdkAttempts+1 {
		return
	}
	b.arms++
	b.armedAt = bus.Requests()
	bus.FailRequests(sdkAttempts)
}

// injected counts the failures met: every arm but a last one no call
// has met yet.
func (b *busFaults) injected(bus failingBus) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.arms > 0 && bus.Requests() < b.armedAt+sdkAttempts {
		return b.arms - 1
	}
	return b.arms
}

// seedLeak adds a sandbox of this stage whose timeout was extended (by
// mistake, or by a client that is not ours): E2B will not end it, the
// state table has no record of it, and only the reaper's list of E2B
// finds and kills it past its lifetime.
func seedLeak(st *stack) string {
	now := st.clock.Now()
	return st.e2b.Seed(e2btest.Seeded{StartedAt: now, EndAt: now.Add(24 * time.Hour), Metadata: map[string]string{
		e2b.MetaApp: e2b.AppName, e2b.MetaStage: Stage, e2b.MetaRunID: "leaked",
	}})
}
