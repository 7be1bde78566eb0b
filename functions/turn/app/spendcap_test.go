package app_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/commonly/runtime/internal/awscalls"
	"github.com/commonly/runtime/shared/llm/llmtest"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// worstUsage answers a request as a provider billing it the most it
// could: a prompt of one token per byte of its messages' text (the
// loop's strict bound counts at least that) and every output token the
// call allowed.
func worstUsage(req llmtest.ChatRequest) *llmtest.Usage {
	var prompt int64
	for _, m := range req.Messages {
		prompt += int64(len(m.Text()))
	}
	out := int64(0)
	if req.MaxTokens != nil {
		out = *req.MaxTokens
	}
	return &llmtest.Usage{Shape: llmtest.OpenAIShape, Prompt: prompt, Completion: out}
}

// allRuns reads every run of the runs table.
func (s *stack) allRuns(t *testing.T) []runs.Run {
	t.Helper()
	out, err := s.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("runs")})
	if err != nil {
		t.Fatal(err)
	}
	var rs []runs.Run
	if err := attributevalue.UnmarshalListOfMaps(out.Items, &rs); err != nil {
		t.Fatal(err)
	}
	return rs
}

// TestSpendCapHoldsUnderConcurrency: with DAILY_SPEND_CAP_USD set, 30
// turns sent at once by one user, with 10 idempotent retries among
// them, model failures (a 503, a rate limit, a call that hangs past
// LLM_TIMEOUT and is priced at its whole output cap) and a paid search,
// every model call billed its worst case: the day's spent total (every
// run's cost, what the ledger counts) never passes the cap, each run
// stays within its reservation, and when all have finished nothing is
// reserved and the day's committed cost is the runs' cost exactly.
func TestSpendCapHoldsUnderConcurrency(t *testing.T) {
	const capUSD, capMicros = "0.05", 50_000
	s := newStackWith(t, map[string]string{"DAILY_SPEND_CAP_USD": capUSD, "TURN_MAX_USD": "0.012", "LLM_TIMEOUT": "300ms"})
	s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout","tools":["commonly_web_search"]}`)
	s.llm.Respond(func(req llmtest.ChatRequest) llmtest.Step {
		var turn int
		for _, m := range req.Messages {
			if m.Role == "user" {
				_, _ = fmt.Sscanf(m.Text(), "turn %d", &turn)
			}
		}
		first := len(req.Messages) <= 2
		var step llmtest.Step
		switch {
		case first && turn%6 == 1:
			return llmtest.ServerError(503)
		case first && turn%6 == 2:
			return llmtest.RateLimited()
		case first && turn%6 == 3:
			return llmtest.Hang()
		case first && turn%6 == 4:
			step = llmtest.Calls(llmtest.Call("commonly_web_search", fmt.Sprintf(`{"query":"q%d"}`, turn)))
		default:
			step = llmtest.Text(strings.Repeat("answer ", 20))
		}
		step.Usage = worstUsage(req)
		return step
	})

	type sent struct {
		status int
		slug   string
		runID  string
	}
	var mu sync.Mutex
	var results []sent
	send := func(wave, i int) {
		body, _ := json.Marshal(map[string]string{"message": fmt.Sprintf("turn %d", i)})
		ev := apiEvent("POST", "/v1/installs/inst-1/turns", "user-1", false, string(body),
			map[string]string{"prefer": "wait=10", "idempotency-key": fmt.Sprintf("w%d-k%d", wave, i)})
		resp := s.h.HandleHTTP(context.Background(), ev)
		var r struct {
			Type  string `json:"type"`
			RunID string `json:"runId"`
		}
		_ = json.Unmarshal([]byte(resp.Body), &r)
		mu.Lock()
		defer mu.Unlock()
		results = append(results, sent{resp.StatusCode, strings.TrimPrefix(r.Type, "https://commonly.dev/problems/"), r.RunID})
	}
	// Waves of 30 at once (each with 10 retries among them), until a wave
	// is refused whole: each wave runs on what the earlier ones' final
	// writes released, until the day's cap has no useful reservation left.
	exhausted := false
	for wave := 0; wave < 30 && !exhausted; wave++ {
		before := len(s.allRuns(t))
		var wg sync.WaitGroup
		for i := range 30 {
			wg.Go(func() { send(wave, i) })
			if i%3 == 0 {
				wg.Go(func() { send(wave, i) }) // an idempotent retry, at the same time
			}
		}
		wg.Wait()
		after := s.allRuns(t)
		exhausted = len(after) == before
		var sp money.Micros
		for _, r := range after {
			sp += r.CostMicros
		}
		t.Logf("wave %d: %d runs admitted, %d in all, spent %s, committed %s", wave, len(after)-before, len(after), sp, s.committed(t))
	}
	if !exhausted {
		t.Fatal("thirty waves and the cap still admits: the test proves nothing")
	}
	refusedAtCap := 0
	for _, r := range results {
		switch {
		case r.status == 429 && r.slug == "spend_cap_reached":
			refusedAtCap++
		case r.status == 200 || r.status == 202 || r.status == 429:
		default:
			t.Errorf("unexpected answer %+v", r)
		}
	}
	all := s.allRuns(t)
	var spent money.Micros
	for _, run := range all {
		if !run.Status.Final() {
			t.Errorf("run %s left %s", run.RunID, run.Status)
		}
		if run.ReservedMicros <= 0 || run.CostMicros > run.ReservedMicros {
			t.Errorf("run %s cost %d, reserved %d", run.RunID, run.CostMicros, run.ReservedMicros)
		}
		spent += run.CostMicros
	}
	if spent > capMicros {
		t.Fatalf("the day spent %s, past the cap of %s", spent, money.Micros(capMicros))
	}
	if refusedAtCap == 0 || len(all) < 5 {
		// The cap must have bitten, and admitted turns across waves.
		t.Fatalf("the cap never bit (%d runs, %d refused): the test proves nothing", len(all), refusedAtCap)
	}
	u := s.call(t, apiEvent("GET", "/v1/me/usage", "user-1", false, "", nil))
	var usage map[string]any
	_ = json.Unmarshal([]byte(u.Body), &usage)
	if usage["reservedMicros"] != 0.0 {
		t.Errorf("still reserved after every run finished: %v", usage)
	}
	committed := s.committed(t)
	if committed != spent {
		t.Errorf("committed %d, the runs spent %d", committed, spent)
	}
	t.Logf("%d requests, %d runs, %d refused at the cap; spent %s of %s", len(results), len(all), refusedAtCap, spent, money.Micros(capMicros))
}

// committed reads the day's capCommittedMicros.
func (s *stack) committed(t *testing.T) money.Micros {
	t.Helper()
	out, err := s.db.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String("state")})
	if err != nil {
		t.Fatal(err)
	}
	var total money.Micros
	for _, item := range out.Items {
		var v struct {
			C int64 `dynamodbav:"capCommittedMicros"`
		}
		_ = attributevalue.UnmarshalMap(item, &v)
		total += money.Micros(v.C)
	}
	return total
}

// TestWithoutACapNothingChanges: a turn without DAILY_SPEND_CAP_USD makes
// exactly the DynamoDB calls it made before reservations existed, and
// with a cap the same number (the admission and the final write become
// one transaction each; no read is added). Counted on the real client.
func TestWithoutACapNothingChanges(t *testing.T) {
	count := func(env map[string]string) map[string]int {
		var rec awscalls.Recorder
		s := newStackRecorded(t, env, &rec)
		s.install(t, `{"userId":"user-1","podId":"pod-1","agentName":"scout"}`)
		s.llm.Respond(func(llmtest.ChatRequest) llmtest.Step { return llmtest.Text("hi") })
		s.turn(t, "warm") // the install and plan reads are cached after it
		rec.Take()
		if run := s.turn(t, "count me"); run.Status != runs.StatusSucceeded {
			t.Fatalf("turn %s", run.Status)
		}
		return awscalls.Count(rec.Take())
	}
	without := count(nil)
	// A one-step turn writes no journal before its final write, with or
	// without a cap: its answer rides on that write.
	want := map[string]int{"TransactWriteItems": 1, "UpdateItem": 1, "PutItem": 1}
	if fmt.Sprint(without) != fmt.Sprint(want) {
		t.Errorf("without a cap: %v, want %v (admit, claim, final put)", without, want)
	}
	with := count(map[string]string{"DAILY_SPEND_CAP_USD": "5"})
	wantCap := map[string]int{"TransactWriteItems": 2, "UpdateItem": 1}
	if fmt.Sprint(with) != fmt.Sprint(wantCap) {
		t.Errorf("with a cap: %v, want %v (admit with its reservation, claim, final write settling it)", with, wantCap)
	}
}
