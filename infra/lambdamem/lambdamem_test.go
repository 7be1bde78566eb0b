package lambdamem

import (
	"strings"
	"testing"
)

func TestLoadReadsTheFile(t *testing.T) {
	s, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"TurnFunction", "AlarmFunction", "ReaperFunction", "EventsFunction"} {
		if mb, err := s.MB(id); err != nil || mb < MinMB {
			t.Errorf("%s: %d MB, %v", id, mb, err)
		}
	}
	if _, err := s.MB("NoSuchFunction"); err == nil || !strings.Contains(err.Error(), "NoSuchFunction") {
		t.Errorf("an unnamed function: %v", err)
	}
}

// Sizes Lambda refuses, and a size without its reason, are refused here
// rather than at deploy time.
func TestParseRefusesWhatLambdaWould(t *testing.T) {
	for name, body := range map[string]string{
		"too small":  `{"functions":{"F":{"memoryMB":64,"why":"x"}}}`,
		"too large":  `{"functions":{"F":{"memoryMB":20480,"why":"x"}}}`,
		"no reason":  `{"functions":{"F":{"memoryMB":256}}}`,
		"no entries": `{"functions":{}}`,
		"fraction":   `{"functions":{"F":{"memoryMB":256.5,"why":"x"}}}`,
	} {
		if _, err := parse([]byte(body)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if s, err := parse([]byte(`{"functions":{"F":{"memoryMB":128,"why":"x"}}}`)); err != nil || s["F"].MemoryMB != 128 {
		t.Errorf("a valid file: %v %v", s, err)
	}
}
