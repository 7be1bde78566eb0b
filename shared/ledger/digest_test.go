package ledger

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"github.com/commonly/runtime/shared/runs"
)

// Every value falls in the bucket whose bounds hold it, at the integer
// boundaries too, and buckets never overlap.
func TestBucketBounds(t *testing.T) {
	for _, v := range []int64{0, 1, 2, 3, 9, 10, 11, 99, 100, 101, 1_000, 12_589, 12_590, 1_000_000, 2_000_000, 999_999_999_999} {
		b := Bucket(v)
		if v > BucketUpper(b) || (b > 0 && v <= BucketUpper(b-1)) {
			t.Errorf("%d in bucket %d: (%d, %d]", v, b, BucketUpper(b-1), BucketUpper(b))
		}
	}
	for i := 1; i < 200; i++ {
		if BucketUpper(i) < BucketUpper(i-1) {
			t.Fatalf("bucket %d's bound %d below bucket %d's %d", i, BucketUpper(i), i-1, BucketUpper(i-1))
		}
	}
}

// The digest is the ledger's runs summed: its cost is the book's, a run
// still open counts only as open cost, a finished one as a turn on its
// engine and plan, with its parts, tokens, errors and code runs.
func TestDigestOf(t *testing.T) {
	b := Book{CostMicros: 1_000 + 250 + 40, Runs: map[string]Counted{
		"open": {CostMicros: 40, Seq: "1"},
		"ok": {CostMicros: 1_000, Seq: "2", Facts: &Facts{Engine: "native", Plan: "free", Model: 900, Input: 500, Cached: 100, Output: 300, Search: 100,
			TokensIn: 2_000, TokensCached: 500, TokensOut: 100, DurationMs: 3_000, CodeRuns: 2}},
		"failed":   {CostMicros: 250, Seq: "3", Facts: &Facts{Engine: "durable-object", Plan: "free", Kind: "llm_error", Model: 250, TokensIn: 10, DurationMs: 40}},
		"refunded": {CostMicros: 0, Seq: "4", Facts: &Facts{Engine: "native", Plan: "free", Kind: "config", Refunded: true}},
	}}
	d := DigestOf(b)
	if d.CostMicros != b.CostMicros || d.OpenMicros != 40 || d.ModelMicros+d.SearchMicros+d.SandboxMicros+d.OpenMicros != d.CostMicros {
		t.Errorf("cost %d open %d model %d search %d sandbox %d; book %d", d.CostMicros, d.OpenMicros, d.ModelMicros, d.SearchMicros, d.SandboxMicros, b.CostMicros)
	}
	if d.Turns != 3 || d.Refunded != 1 || d.ByPlan["free"] != 3 || d.Plan() != "free" {
		t.Errorf("turns %d refunded %d by plan %v", d.Turns, d.Refunded, d.ByPlan)
	}
	if n := d.ByEngine["native"]; n.Turns != 2 || n.CostMicros != 1_000 || n.MaxCost != 1_000 {
		t.Errorf("native %+v", n)
	}
	if d.Errors["llm_error"] != 1 || d.Errors["config"] != 1 || len(d.Errors) != 2 {
		t.Errorf("errors %v", d.Errors)
	}
	if d.CodeTurns != 1 || d.CodeRuns != 2 || d.TokensIn != 2_010 || d.MaxTokens != 2_100 || d.MaxDurationMs != 3_000 || d.MaxCost != 1_000 {
		t.Errorf("code %d/%d tokens %d max tokens %d max ms %d max cost %d", d.CodeTurns, d.CodeRuns, d.TokensIn, d.MaxTokens, d.MaxDurationMs, d.MaxCost)
	}
	counts := map[int]int64{}
	d.CostHist.AddTo(counts)
	var n int64
	for _, c := range counts {
		n += c
	}
	if n != 3 || counts[Bucket(1_000)] != 1 || counts[0] != 1 {
		t.Errorf("cost histogram %v", d.CostHist)
	}
}

// A resumed run's facts (a finished run taken over from a stopped
// worker) count it among the day's resumed turns, its lost attempts'
// estimate among the day's costs.
func TestResumedRunInTheDigest(t *testing.T) {
	r := &runs.Run{RunID: "run_1", UserID: "u1", Day: "2026-12-02", Engine: "native", Status: runs.StatusSucceeded, Attempts: 2,
		CreatedAt: time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), Steps: []runs.Step{}}
	r.AddCost(runs.Cost{ModelMicros: 900, LostMicros: 300})
	r.End(runs.StatusSucceeded, "", "", r.CreatedAt.Add(time.Minute))
	item, err := attributevalue.MarshalMap(r)
	if err != nil {
		t.Fatal(err)
	}
	f := decodeFacts(item)
	if f == nil || !f.Resumed || f.Lost != 300 || f.Model != 900 {
		t.Fatalf("facts %+v", f)
	}
	d := DigestOf(Book{CostMicros: 1_200, Runs: map[string]Counted{"run_1": {CostMicros: 1_200, Seq: "1", Facts: f}}})
	if d.Resumed != 1 || d.LostMicros != 300 || d.ModelMicros+d.LostMicros != d.CostMicros {
		t.Errorf("digest resumed %d lost %d model %d of %d", d.Resumed, d.LostMicros, d.ModelMicros, d.CostMicros)
	}
}
