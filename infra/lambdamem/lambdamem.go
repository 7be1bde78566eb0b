// Package lambdamem is each Lambda function's memory size, kept in one
// file (memory.json, embedded) that the CDK stack (infra/cdk/stack)
// builds the functions with and the scale model (bench/scale) prices
// them at, so the two cannot disagree. The sizes are chosen with `make
// memsize` (docs/benchmarks.md, "Memory size").
package lambdamem

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
)

//go:embed memory.json
var embedded []byte

// Lambda's bounds on a function's memory, in MB.
const (
	MinMB = 128
	MaxMB = 10240
)

// Function is one function's entry.
type Function struct {
	MemoryMB int    `json:"memoryMB"`
	Why      string `json:"why"`
}

// Sizes are the functions' entries by construct id (TurnFunction, …).
type Sizes map[string]Function

// Load reads the embedded file and checks every size is one Lambda
// accepts (128 to 10,240 MB, a whole number) and carries its reason.
func Load() (Sizes, error) { return parse(embedded) }

func parse(b []byte) (Sizes, error) {
	var f struct {
		Functions Sizes `json:"functions"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("lambdamem: memory.json: %w", err)
	}
	if len(f.Functions) == 0 {
		return nil, fmt.Errorf("lambdamem: memory.json names no function")
	}
	for _, id := range f.Functions.IDs() {
		fn := f.Functions[id]
		if fn.MemoryMB < MinMB || fn.MemoryMB > MaxMB {
			return nil, fmt.Errorf("lambdamem: %s: %d MB is outside Lambda's %d to %d", id, fn.MemoryMB, MinMB, MaxMB)
		}
		if fn.Why == "" {
			return nil, fmt.Errorf("lambdamem: %s: no reason given for %d MB", id, fn.MemoryMB)
		}
	}
	return f.Functions, nil
}

// MB is the memory of the function id; an id the file does not name is
// an error, so a new function cannot be deployed at a size nobody chose.
func (s Sizes) MB(id string) (int, error) {
	fn, ok := s[id]
	if !ok {
		return 0, fmt.Errorf("lambdamem: memory.json has no size for %s (it has %v)", id, s.IDs())
	}
	return fn.MemoryMB, nil
}

// IDs are the functions named, sorted.
func (s Sizes) IDs() []string {
	ids := make([]string, 0, len(s))
	for id := range s {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
