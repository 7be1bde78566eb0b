package stack

import (
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/tracing"
)

// TestTracingOff: a stage with tracing off declares the variables empty
// (a stage may still set them) and grants no role X-Ray.
func TestTracingOff(t *testing.T) {
	s := devSettings()
	s.Stage, s.Tracing = "notrace", Tracing{Off: true}
	x := synth(t, s)
	for _, c := range fnCases {
		vars := x.props(t, x.id(c.fn(x).Function))["Environment"].(map[string]any)["Variables"].(map[string]any)
		if v, ok := vars[tracing.EnvXRay]; !ok || v != "" {
			t.Errorf("%s: TRACES_XRAY = %v (declared %v), want declared empty", c.id, v, ok)
		}
		for _, st := range statementsOf(t, x, c.fn(x).Role) {
			if strings.Contains(st.Actions, "xray:") {
				t.Errorf("%s: an X-Ray grant with tracing off: %+v", c.id, st)
			}
		}
	}
}

// TestTracingShareIsChecked: a share outside 0..1 refuses the stage.
func TestTracingShareIsChecked(t *testing.T) {
	for _, r := range []float64{-0.1, 1.5} {
		s := devSettings()
		s.Tracing.SampleRatio = &r
		if err := s.validate(); err == nil || !strings.Contains(err.Error(), "sampleRatio") {
			t.Errorf("sampleRatio %v: %v", r, err)
		}
	}
}
