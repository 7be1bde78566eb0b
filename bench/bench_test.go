package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/bench/internal/script"
	"github.com/commonly/runtime/bench/internal/turnstack"
	"github.com/commonly/runtime/infra/localstack"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/runs"
)

// chat posts a chat-completions request with toolMsgs tool messages.
func chat(t *testing.T, url string, toolMsgs int, offer string) (int, map[string]any) {
	t.Helper()
	msgs := []map[string]any{{"role": "user", "content": "hi"}}
	for i := range toolMsgs {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": fmt.Sprint("c", i), "type": "function", "function": map[string]any{"name": script.Tool, "arguments": "{}"}}}},
			map[string]any{"role": "tool", "tool_call_id": fmt.Sprint("c", i), "content": "ok"})
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs, "tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": offer}}}})
	res, err := http.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(res.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("%d %s", res.StatusCode, b)
	}
	return res.StatusCode, out
}

func TestScriptAnswersByToolMessages(t *testing.T) {
	s := &script.Server{}
	srv := httptest.NewServer(s)
	defer srv.Close()
	// Out of order and repeated: the answer depends on the request only.
	for _, n := range []int{2, 0, 1, 0, 2} {
		status, out := chat(t, srv.URL, n, script.Tool)
		if status != http.StatusOK {
			t.Fatalf("%d tool messages: %d %v", n, status, out)
		}
		choice := out["choices"].([]any)[0].(map[string]any)
		msg := choice["message"].(map[string]any)
		calls, _ := msg["tool_calls"].([]any)
		switch n {
		case 0, 1:
			fn := calls[0].(map[string]any)["function"].(map[string]any)
			if choice["finish_reason"] != "tool_calls" || len(calls) != 1 || fn["name"] != script.Tool || fn["arguments"] != fmt.Sprintf(`{"step":%d}`, n+1) {
				t.Errorf("%d tool messages: %v", n, choice)
			}
		case 2:
			if choice["finish_reason"] != "stop" || msg["content"] != script.Final || len(calls) != 0 {
				t.Errorf("final: %v", choice)
			}
		}
		if out["model"] != "m" || out["usage"].(map[string]any)["prompt_tokens"] != float64(script.PromptTokens) {
			t.Errorf("model or usage: %v", out)
		}
	}
	if status, _ := chat(t, srv.URL, 3, script.Tool); status != http.StatusBadRequest {
		t.Errorf("a fourth step answered %d", status)
	}
	if status, _ := chat(t, srv.URL, 0, "other"); status != http.StatusBadRequest {
		t.Errorf("a request without the tool answered %d", status)
	}
	if c := s.Counts(); c.Requests != 7 || c.Rejected != 2 {
		t.Errorf("counts %+v", c)
	}
}

func TestCounterCountsEachCallByOperation(t *testing.T) {
	ctx := context.Background()
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", turnstack.Tables)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	c := localstack.NewCounter()
	client := db.Client(c.Option())
	key := map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "a"}, "sk": &types.AttributeValueMemberS{Value: "b"}}
	for range 2 {
		if _, err := client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(turnstack.Tables.State), Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	before := c.Snapshot()
	if _, err := client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(turnstack.Tables.State), Item: key}); err != nil {
		t.Fatal(err)
	}
	if got := c.Snapshot(); got["GetItem"] != 2 || got["PutItem"] != 1 || got.Total() != 3 {
		t.Errorf("counts %v", got)
	}
	if d := c.Snapshot().Sub(before); d.Total() != 1 || d.PerTurn(2) != "PutItem 0.5" {
		t.Errorf("difference %v %q", d, d.PerTurn(2))
	}
}

// TestTurnThroughTheAPI runs the benchmark's turn once and checks what
// it measures: the script's calls, the turn's DynamoDB calls, a stored
// run; and the copies BenchmarkTurnStoredRuns stores of it.
func TestTurnThroughTheAPI(t *testing.T) {
	r := newRig(t, slog.LevelWarn, nil)
	ctx := context.Background()
	calls0 := r.counter.Snapshot()
	done, err := r.client.Turn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	calls := r.counter.Snapshot().Sub(calls0)
	if got := r.model.Counts(); got.Requests != script.Steps || got.Rejected != 0 {
		t.Errorf("model requests %+v", got)
	}
	// The first turn of a container reads the install with the plan in
	// one batch; the worker finds it in the container's cache.
	// The final write is a PutItem: the run's cost goes to the day through
	// the alarm function's ledger, not in the turn's transaction. Each
	// checkpoint (before each model call but the first) carries the
	// turn's journal: a transaction with its entries; the final answer's
	// entry rides on the final write.
	if calls["BatchGetItem"] != 1 || calls["GetItem"] != 0 || calls["TransactWriteItems"] != script.Steps || calls["UpdateItem"] != 1 || calls["PutItem"] != 1 {
		t.Errorf("DynamoDB calls %v", calls)
	}
	if _, err := r.st.Turn.Store.GetRun(ctx, done.RunID); err != nil {
		t.Fatalf("run not stored: %v", err)
	}
	count := func(table string) int32 {
		out, err := r.st.Dynamo().Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Count
	}
	runs0, state0 := count(turnstack.Tables.Runs), count(turnstack.Tables.State)
	if err := turnstack.StoreCopies(ctx, r.st.Dynamo(), turnstack.Tables, done, 30); err != nil {
		t.Fatal(err)
	}
	if dr, ds := count(turnstack.Tables.Runs)-runs0, count(turnstack.Tables.State)-state0; dr != 30 || ds != 30 {
		t.Errorf("the copies added %d runs and %d state items, want 30 and 30", dr, ds)
	}
	copied, err := r.st.Turn.Store.GetRun(ctx, done.RunID+"-copy-29")
	if err != nil || copied.Status != runs.StatusSucceeded || len(copied.Steps) != script.Steps {
		t.Errorf("a copy: %+v, %v", copied, err)
	}

	// A warm turn reads nothing: the install is cached and the plan
	// remembered (the admission checks it), so 2 fixed writes (admission,
	// final), the claim and a checkpoint per model step but the first:
	// as many calls as before the journal, which rides on them.
	calls0 = r.counter.Snapshot()
	if _, err := r.client.Turn(ctx); err != nil {
		t.Fatal(err)
	}
	calls = r.counter.Snapshot().Sub(calls0)
	if calls.Total() != 2+script.Steps || calls["TransactWriteItems"] != script.Steps || calls["UpdateItem"] != 1 || calls["PutItem"] != 1 {
		t.Errorf("DynamoDB calls of a warm turn %v", calls)
	}
}
