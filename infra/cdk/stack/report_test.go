package stack

import "testing"

// The stack names its tables for operators' tools: `make report` reads
// STATE_TABLE from the StateTableName output.
func TestTableNameOutputs(t *testing.T) {
	x := synth(t, devSettings())
	outputs, _ := x.json["Outputs"].(map[string]any)
	for name, table := range map[string]string{"StateTableName": x.id(x.Data.State), "RunsTableName": x.id(x.Data.Runs)} {
		o, ok := outputs[name].(map[string]any)
		if !ok {
			t.Errorf("no %s output", name)
			continue
		}
		equal(t, name, o["Value"], ref(table))
	}
}
