package stack

import (
	"encoding/json"
	"os"
	"strconv"
	"testing"
)

// The scale model (bench/scale, docs/scale.md) reads the sandbox cap from
// its inputs; it is the stack's. (The functions' memory sizes both read
// from infra/lambdamem: TestFunctions.)
func TestScaleModelInputsAreTheStacks(t *testing.T) {
	b, err := os.ReadFile("../../../bench/scale/inputs.json")
	if err != nil {
		t.Fatal(err)
	}
	var in struct {
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
	if in.Stack.SandboxCap != float64(sandboxCap) {
		t.Errorf("bench/scale/inputs.json has a sandbox cap of %g, the stack %d", in.Stack.SandboxCap, sandboxCap)
	}
}
