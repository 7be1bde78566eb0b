package stack

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// The scale model (bench/scale, docs/scale.md) reads the turn function's
// memory and the sandbox cap from its inputs; they are the stack's.
func TestScaleModelInputsAreTheStacks(t *testing.T) {
	b, err := os.ReadFile("../../../bench/scale/inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
		Turn struct {
			MemoryMB float64 `json:"memoryMB"`
		} `json:"turn"`
		Alarm struct {
			MemoryMB float64 `json:"memoryMB"`
		} `json:"alarm"`
		Reaper struct {
			MemoryMB float64 `json:"memoryMB"`
		} `json:"reaper"`
		Stack struct {
			SandboxCap float64 `json:"sandboxCap"`
		} `json:"stack"`
	}
	if err := json.Unmarshal(b, &in); err != nil {
		t.Fatal(err)
	}
	sandboxCap, err := strconv.Atoi(turnMaxSandboxes)
	if err != nil {
		t.Fatal(err)
	}
	got := []float64{in.Turn.MemoryMB, in.Alarm.MemoryMB, in.Reaper.MemoryMB, in.Stack.SandboxCap}
	want := []float64{turnMemoryMB, alarmMemoryMB, reaperMemoryMB, float64(sandboxCap)}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("bench/scale/inputs.json has %v (turn, alarm, reaper memory, sandbox cap), the stack %v", got, want)
			break
		}
	}
}
