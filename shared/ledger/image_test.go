package ledger_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/runs"
)

// The ledger's view reads a run as the store marshals it.
func TestDecodeImageOfAStoredRun(t *testing.T) {
	r := &runs.Run{RunID: "run_1", UserID: "u1", Day: "2026-12-02", Engine: "durable-object", Status: runs.StatusSucceeded,
		CreatedAt: time.Date(2026, 12, 2, 23, 59, 59, 900_000_000, time.UTC), Steps: []runs.Step{{Index: 0, Model: "m"}}}
	r.AddCost(runs.Cost{ModelMicros: 1_250_000, SandboxMicros: 3})
	item, err := attributevalue.MarshalMap(r)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ledger.DecodeImage(item)
	want := ledger.Image{RunID: "run_1", UserID: "u1", Day: "2026-12-02", Engine: "durable-object", CostMicros: 1_250_003}
	if err != nil || got != want {
		t.Fatalf("DecodeImage = %+v, %v; want %+v", got, err, want)
	}
	// Only ImageAttributes are needed.
	for name := range item {
		if !slices.Contains(ledger.ImageAttributes, name) {
			delete(item, name)
		}
	}
	if got, err := ledger.DecodeImage(item); err != nil || got != want {
		t.Fatalf("DecodeImage of ImageAttributes only = %+v, %v", got, err)
	}
}

func TestDecodeImageRefusesWhatCannotBeCounted(t *testing.T) {
	good := map[string]types.AttributeValue{
		"runId": s("run_1"), "userId": s("u1"), "day": s("2026-12-02"), "engine": s("native"), "costMicros": n("10"),
	}
	cases := map[string]func(map[string]types.AttributeValue){
		"no userId":     func(m map[string]types.AttributeValue) { delete(m, "userId") },
		"no day":        func(m map[string]types.AttributeValue) { delete(m, "day") },
		"no runId":      func(m map[string]types.AttributeValue) { delete(m, "runId") },
		"not a day":     func(m map[string]types.AttributeValue) { m["day"] = s("2026-13-01") },
		"day with time": func(m map[string]types.AttributeValue) { m["day"] = s("2026-12-02T00:00:00Z") },
		"forged user":   func(m map[string]types.AttributeValue) { m["userId"] = s("u1#DAY") },
		"negative cost": func(m map[string]types.AttributeValue) { m["costMicros"] = n("-1") },
		"cost a string": func(m map[string]types.AttributeValue) { m["costMicros"] = s("10") },
		"no image":      func(m map[string]types.AttributeValue) { clear(m) },
	}
	for name, spoil := range cases {
		m := map[string]types.AttributeValue{}
		for k, v := range good {
			m[k] = v
		}
		spoil(m)
		if _, err := ledger.DecodeImage(m); !errors.Is(err, ledger.ErrMalformed) {
			t.Errorf("%s: err = %v, want ErrMalformed", name, err)
		}
	}
	if _, err := ledger.DecodeImage(good); err != nil {
		t.Fatalf("good image: %v", err)
	}
	// A run without a cost yet (just admitted) counts 0.
	delete(good, "costMicros")
	if im, err := ledger.DecodeImage(good); err != nil || im.CostMicros != 0 {
		t.Fatalf("no cost: %+v, %v", im, err)
	}
}

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }
