package apitest

import "testing"

// ValidateEvent refuses data its type's schema does not allow.
func TestValidateEventRefusesWhatTheSchemaDoesNot(t *testing.T) {
	v := Default(t)
	ok := `{"type":"tool.started","id":3,"at":"2026-12-04T12:00:00Z","step":0,"callId":"c","name":"n","args":"{}"}`
	if err := v.ValidateEvent("tool.started", []byte(ok)); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ typ, data string }{
		"missing field": {"tool.started", `{"type":"tool.started","id":3,"at":"2026-12-04T12:00:00Z","step":0,"callId":"c","name":"n"}`},
		"extra field":   {"tool.started", `{"type":"tool.started","id":3,"at":"2026-12-04T12:00:00Z","step":0,"callId":"c","name":"n","args":"{}","x":1}`},
		"id zero":       {"tool.started", `{"type":"tool.started","id":0,"at":"2026-12-04T12:00:00Z","step":0,"callId":"c","name":"n","args":"{}"}`},
		"type differs":  {"tool.finished", ok},
		"unknown type":  {"tool.exploded", `{"type":"tool.exploded","id":1,"at":"2026-12-04T12:00:00Z"}`},
	} {
		if err := v.ValidateEvent(c.typ, []byte(c.data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if len(v.EventTypes()) != 11 {
		t.Errorf("event types %v", v.EventTypes())
	}
}
