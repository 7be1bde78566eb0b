package metrics

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestEmitWritesEMF(t *testing.T) {
	var buf bytes.Buffer
	e, err := New(Config{Writer: &buf, Now: func() time.Time { return time.UnixMilli(1796212800000) }})
	if err != nil {
		t.Fatal(err)
	}
	e.Emit(map[string]string{"Status": "succeeded", "Engine": "native"},
		Metric{Name: "Turns", Unit: Count, Value: 1}, Metric{Name: "TurnCostMicros", Unit: None, Value: 239})
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatalf("not one JSON line: %q", buf.String())
	}
	if doc["Engine"] != "native" || doc["Turns"] != 1.0 || doc["TurnCostMicros"] != 239.0 {
		t.Errorf("values: %v", doc)
	}
	aws := doc["_aws"].(map[string]any)
	cw := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	dims := cw["Dimensions"].([]any)[0].([]any)
	if aws["Timestamp"] != 1796212800000.0 || cw["Namespace"] != Namespace || len(dims) != 2 || dims[0] != "Engine" || dims[1] != "Status" {
		t.Errorf("directive: %v", aws)
	}
	if ms := cw["Metrics"].([]any); len(ms) != 2 || ms[0].(map[string]any)["Unit"] != "Count" {
		t.Errorf("metrics: %v", ms)
	}
}

func TestNilEmitterDiscards(t *testing.T) {
	var e *Emitter
	e.Emit(map[string]string{"A": "b"}, Metric{Name: "X", Unit: Count, Value: 1}) // must not panic
}

func TestNewNeedsAWriter(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("an emitter without a writer was built")
	}
}
