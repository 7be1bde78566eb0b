package pricing

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEmbeddedTablePricesEverythingTheRuntimeUses(t *testing.T) {
	tab, err := Load("")
	if err != nil {
		t.Fatalf("Load(\"\"): %v", err)
	}
	if tab.Version() == "" {
		t.Error("empty version")
	}
	for _, m := range []string{"deepseek-v4-flash", "deepseek-v4-pro", "deepseek-flash", "offline-demo"} {
		if err := tab.Model(m); err != nil {
			t.Errorf("Model(%q): %v", m, err)
		}
	}
	for _, p := range []string{"exa", "tavily"} {
		if err := tab.Search(p); err != nil {
			t.Errorf("Search(%q): %v", p, err)
		}
	}
	for _, p := range []string{"e2b", "local"} {
		if err := tab.Sandbox(p); err != nil {
			t.Errorf("Sandbox(%q): %v", p, err)
		}
	}
}

func TestUnpricedIsAnError(t *testing.T) {
	tab := mustLoad(t)
	checks := map[string]error{
		"model":   tab.Model("gpt-5"),
		"search":  tab.Search("bing"),
		"sandbox": tab.Sandbox("firecracker"),
	}
	for name, err := range checks {
		if !errors.Is(err, ErrUnpriced) {
			t.Errorf("%s: err = %v, want ErrUnpriced", name, err)
		}
	}
	if _, err := tab.SearchCost("bing", 1); !errors.Is(err, ErrUnpriced) {
		t.Errorf("SearchCost: err = %v, want ErrUnpriced", err)
	}
	if _, err := tab.SandboxCost("firecracker", 1); !errors.Is(err, ErrUnpriced) {
		t.Errorf("SandboxCost: err = %v, want ErrUnpriced", err)
	}
}

func TestLoadReadsTheOverrideFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "prices.json")
	if err := os.WriteFile(path, []byte(flatTable), 0o600); err != nil {
		t.Fatal(err)
	}
	tab, err := Load(path)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if tab.Version() != "test-flat" {
		t.Errorf("Version = %q, want the file's", tab.Version())
	}
	if err := tab.Model("deepseek-v4-flash"); !errors.Is(err, ErrUnpriced) {
		t.Errorf("the override replaces the embedded table, but deepseek-v4-flash is priced: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

// flatTable is a minimal valid table the validation cases mutate.
const flatTable = `{
  "version": "test-flat",
  "models": {"m": [{"effectiveFrom": "2026-01-01T00:00:00Z",
    "flat": {"inputCacheHit": "0.1", "inputCacheMiss": "1", "output": "2"}}]},
  "search": {"exa": {"usdPerQuery": "0.005"}},
  "sandbox": {"local": {"usdPerSecond": "0"}}
}`

func TestValidation(t *testing.T) {
	sched := func(windows string) string {
		return `{"version": "v", "schedules": {"s": [{"effectiveFrom": "2026-01-01T00:00:00Z", "peak": [` + windows + `]}]},
		  "models": {"m": [{"effectiveFrom": "2026-01-01T00:00:00Z", "peakSchedule": "s",
		    "peak": {"inputCacheHit": "1", "inputCacheMiss": "1", "output": "1"},
		    "offPeak": {"inputCacheHit": "1", "inputCacheMiss": "1", "output": "1"}}]}}`
	}
	cases := []struct {
		name    string
		json    string
		wantErr string // "" means valid
	}{
		{"minimal flat table", flatTable, ""},
		{"unknown field", strings.Replace(flatTable, `"version"`, `"currency": "USD", "version"`, 1), "unknown field"},
		{"unknown field in a price", strings.Replace(flatTable, `"output": "2"`, `"output": "2", "reasoning": "1"`, 1), "unknown field"},
		{"negative price", strings.Replace(flatTable, `"output": "2"`, `"output": "-2"`, 1), "non-negative"},
		{"price as a JSON number", strings.Replace(flatTable, `"output": "2"`, `"output": 2`, 1), "decimal string"},
		{"price too fine", strings.Replace(flatTable, `"output": "2"`, `"output": "0.0000000001"`, 1), "decimal places"},
		{"price in the wrong unit", strings.Replace(flatTable, `"output": "2"`, `"output": "2000"`, 1), "sanity bound"},
		{"missing price", strings.Replace(flatTable, `, "output": "2"`, ``, 1), "missing output"},
		{"missing version", strings.Replace(flatTable, `"version": "test-flat"`, `"version": " "`, 1), "version missing"},
		{"no models", `{"version": "v", "models": {}}`, "no models"},
		{"model without prices", `{"version": "v", "models": {"m": []}}`, "no prices"},
		{"bad instant", strings.Replace(flatTable, `2026-01-01T00:00:00Z`, `2026-01-01`, 1), "RFC 3339"},
		{"trailing data", flatTable + `{}`, "trailing data"},
		{"free sandbox without its price", strings.Replace(flatTable, `{"usdPerSecond": "0"}`, `{}`, 1), "usdPerSecond missing"},
		{"search price too high", strings.Replace(flatTable, `"0.005"`, `"11"`, 1), "sanity bound"},
		{"two prices at the same instant", strings.Replace(flatTable, `"flat": {"inputCacheHit": "0.1", "inputCacheMiss": "1", "output": "2"}}]`,
			`"flat": {"inputCacheHit": "0.1", "inputCacheMiss": "1", "output": "2"}}, {"effectiveFrom": "2026-01-01T01:00:00+01:00", "flat": {"inputCacheHit": "0.1", "inputCacheMiss": "1", "output": "3"}}]`, 1), "two versions"},
		{"flat with a schedule", strings.Replace(flatTable, `"flat"`, `"peakSchedule": "s", "flat"`, 1), "flat excludes"},
		{"neither flat nor schedule", strings.Replace(flatTable, `"flat"`, `"peak"`, 1), "give flat"},
		{"unknown schedule", strings.Replace(sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}`), `"peakSchedule": "s"`, `"peakSchedule": "t"`, 1), "unknown peakSchedule"},
		{"schedule starting after the price", strings.Replace(sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}`), `"effectiveFrom": "2026-01-01T00:00:00Z", "peak"`, `"effectiveFrom": "2026-02-01T00:00:00Z", "peak"`, 1), "starts later"},
		{"valid windows", sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}, {"utcOffset": "+00:00", "from": "04:00", "to": "24:00"}`), ""},
		{"no windows", sched(``), "no peak windows"},
		{"overlapping windows", sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}, {"utcOffset": "+00:00", "from": "03:59", "to": "05:00"}`), "overlaps"},
		{"overlap across offsets", sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}, {"utcOffset": "+08:00", "from": "11:30", "to": "13:00"}`), "overlaps"},
		{"overlap across days and offsets", sched(`{"utcOffset": "+00:00", "days": ["Fri"], "from": "16:00", "to": "17:00"}, {"utcOffset": "+08:00", "days": ["Sat"], "from": "00:00", "to": "00:01"}`), "overlaps"},
		{"no overlap on other days", sched(`{"utcOffset": "+00:00", "days": ["Fri"], "from": "16:00", "to": "17:00"}, {"utcOffset": "+08:00", "days": ["Fri"], "from": "00:00", "to": "00:01"}`), ""},
		{"window ending before it starts", sched(`{"utcOffset": "+00:00", "from": "22:00", "to": "02:00"}`), "not before"},
		{"clock past the day", sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "24:01"}`), "between 00:00 and 24:00"},
		{"clock not HH:MM", sched(`{"utcOffset": "+00:00", "from": "1:00", "to": "04:00"}`), "not HH:MM"},
		{"bad offset", sched(`{"utcOffset": "+8", "from": "01:00", "to": "04:00"}`), "not ±HH:MM"},
		{"unknown day", sched(`{"utcOffset": "+00:00", "days": ["Saturday"], "from": "01:00", "to": "04:00"}`), "not one of"},
		{"day twice", sched(`{"utcOffset": "+00:00", "days": ["Sat", "Sat"], "from": "01:00", "to": "04:00"}`), "given twice"},
		{"peak rates missing", strings.Replace(sched(`{"utcOffset": "+00:00", "from": "01:00", "to": "04:00"}`), `"peak": {"inputCacheHit": "1", "inputCacheMiss": "1", "output": "1"},`, ``, 1), "peak: missing"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.json))
			if c.wantErr == "" {
				if err != nil {
					t.Fatalf("Parse: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Parse succeeded, want an error containing %q", c.wantErr)
			}
			if !errors.Is(err, ErrInvalidTable) || !strings.Contains(err.Error(), c.wantErr) {
				t.Fatalf("err = %v, want ErrInvalidTable containing %q", err, c.wantErr)
			}
		})
	}
}

func mustLoad(t *testing.T) *Table {
	t.Helper()
	tab, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	return tab
}
