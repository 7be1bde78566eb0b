package ledger_test

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
)

// memStore keeps user-days in memory: the ledger's own work, without
// DynamoDB's.
type memStore struct{ days map[ledger.DayKey]ledger.Day }

func (m *memStore) ReadDays(_ context.Context, keys []ledger.DayKey) (map[ledger.DayKey]ledger.Day, error) {
	out := make(map[ledger.DayKey]ledger.Day, len(keys))
	for _, k := range keys {
		out[k] = m.days[k]
	}
	return out, nil
}

func (m *memStore) WriteDay(_ context.Context, w ledger.Write) error {
	d := m.days[w.Key]
	d.Book = w.Next
	m.days[w.Key] = d
	return nil
}

func (m *memStore) MarkAlarm(context.Context, ledger.DayKey, string, string, time.Time) (bool, error) {
	return true, nil
}

// BenchmarkProcessBatch is the alarm function's own work on a batch of
// 100 stream records (25 four-record turns of 3 users, each final record
// with two steps and a code run), the translated images as the handler
// hands them: folding, counting, and the usage report's facts and digest.
func BenchmarkProcessBatch(b *testing.B) {
	var records []ledger.Record
	now := time.Date(2026, 10, 3, 12, 0, 0, 0, time.UTC)
	seq := 1000
	for turn := range 25 {
		r := runs.Run{RunID: fmt.Sprintf("run-%02d", turn), UserID: fmt.Sprintf("user-%d", turn%3), Day: "2026-10-03", Engine: "native",
			Status: runs.StatusQueued, CreatedAt: now, Steps: []runs.Step{}}
		for step := range 4 {
			switch step {
			case 1:
				r.Status = runs.StatusRunning
			case 2:
				r.Steps = append(r.Steps, runs.Step{Index: 0, Model: "m", PromptTokens: 1200, CompletionTokens: 80, CostMicros: 500,
					ToolCalls: []runs.ToolCall{{ID: "c1", Name: "commonly_run_code", Args: `{"code":"print(1)"}`, OK: true, CodeRun: &runs.CodeRun{Language: "python", CodeChars: 8, ExitKind: "ok"}}}})
				r.Tokens.Add(1200, 1000, 80)
				r.AddCost(runs.Cost{ModelMicros: 500})
			case 3:
				r.Steps = append(r.Steps, runs.Step{Index: 1, Model: "m", PromptTokens: 1500, CompletionTokens: 40, CostMicros: 400})
				r.Tokens.Add(1500, 1200, 40)
				r.AddCost(runs.Cost{ModelMicros: 400})
				r.End(runs.StatusSucceeded, "", "", now.Add(3*time.Second))
			}
			item, err := attributevalue.MarshalMap(r)
			if err != nil {
				b.Fatal(err)
			}
			img := map[string]types.AttributeValue{}
			for _, name := range ledger.FinishedImageAttributes {
				if v, ok := item[name]; ok {
					img[name] = v
				}
			}
			seq++
			records = append(records, ledger.Record{Seq: strconv.Itoa(seq), Op: ledger.Modify, New: img})
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		st := &memStore{days: map[ledger.DayKey]ledger.Day{}}
		l, err := ledger.New(ledger.Config{Store: st, Publisher: nopPublisher{}, Threshold: money.Micros(2_000_000)})
		if err != nil {
			b.Fatal(err)
		}
		if res := l.Process(context.Background(), records); res.Processed != len(records) {
			b.Fatalf("processed %d of %d", res.Processed, len(records))
		}
	}
}
