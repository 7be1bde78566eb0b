package app

import (
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/money"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadConfig(t *testing.T) {
	c, err := LoadConfig(env(map[string]string{"STATE_TABLE": "state", "EVENT_BUS_NAME": "bus"}))
	if err != nil || c != (Config{StateTable: "state", EventBus: "bus", Threshold: 2_000_000}) {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	c, err = LoadConfig(env(map[string]string{"STATE_TABLE": "state", "EVENT_BUS_NAME": "arn:aws:events:us-east-1:1:event-bus/b", "DAILY_SPEND_ALARM_USD": " 0.0001 "}))
	if err != nil || c.Threshold != money.Micros(100) {
		t.Fatalf("0.0001: %+v, %v", c, err)
	}
	// Every problem at once.
	_, err = LoadConfig(env(map[string]string{"DAILY_SPEND_ALARM_USD": "0"}))
	for _, want := range []string{"STATE_TABLE", "EVENT_BUS_NAME", "DAILY_SPEND_ALARM_USD"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("missing %s in %v", want, err)
		}
	}
	for _, bad := range []string{"-1", "two", "0.0000001"} {
		if _, err := LoadConfig(env(map[string]string{"STATE_TABLE": "s", "EVENT_BUS_NAME": "b", "DAILY_SPEND_ALARM_USD": bad})); err == nil {
			t.Errorf("DAILY_SPEND_ALARM_USD=%s accepted", bad)
		}
	}
}

// Variables lists exactly the variables LoadConfig reads, sorted.
func TestVariablesAreTheOnesRead(t *testing.T) {
	if !slices.IsSorted(Variables) {
		t.Errorf("not sorted: %v", Variables)
	}
	var read []string
	_, _ = LoadConfig(func(k string) string { read = append(read, k); return "" })
	slices.Sort(read)
	if !slices.Equal(slices.Compact(read), Variables) {
		t.Errorf("read %v, declared %v", read, Variables)
	}
}
