package pricing

import (
	"errors"
	"testing"
	"time"

	"github.com/commonly/runtime/shared/llm"
	"github.com/commonly/runtime/shared/money"
)

// ModelCost is the call's whole cost (ModelCostParts' ModelMicros), as
// the tests read it.
func (t *Table) ModelCost(model string, at time.Time, u llm.Usage) (money.Micros, error) {
	c, err := t.ModelCostParts(model, at, u)
	return c.ModelMicros, err
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

// A million output tokens cost the output rate in micro-dollars, so the
// tier in force reads straight off the cost.
var million = llm.Usage{CompletionTokens: 1_000_000}

func TestPeakWindowsOfTheEmbeddedTable(t *testing.T) {
	tab := mustLoad(t)
	const peak, offPeak = 1_320_000, 660_000 // deepseek-v4-flash output
	cases := []struct {
		name string
		at   string
		want money.Micros
	}{
		{"before the first window", "2026-08-18T00:59:59Z", offPeak},
		{"first window opens", "2026-08-18T01:00:00Z", peak},
		{"first window's last second", "2026-08-18T03:59:59Z", peak},
		{"first window closes", "2026-08-18T04:00:00Z", offPeak},
		{"before the second window", "2026-08-18T05:59:59Z", offPeak},
		{"second window opens", "2026-08-18T06:00:00Z", peak},
		{"second window's last second", "2026-08-18T09:59:59.999Z", peak},
		{"second window closes", "2026-08-18T10:00:00Z", offPeak},
		{"a time written in Beijing time", "2026-08-18T09:30:00+08:00", peak},
		{"Saturday before the weekend rule", "2026-08-22T02:00:00Z", peak},
		{"first Beijing Sunday off-peak", "2026-08-23T02:00:00Z", offPeak},
		{"Beijing Saturday off-peak", "2026-08-29T01:00:00Z", offPeak},
		{"Beijing Friday still peak", "2026-08-28T09:59:59Z", peak},
		{"Beijing Monday before the window", "2026-08-31T00:59:59Z", offPeak},
		{"Beijing Monday window opens", "2026-08-31T01:00:00Z", peak},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tab.ModelCost("deepseek-v4-flash", utc(c.at), million)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("cost at %s = %d µ$, want %d", c.at, got, c.want)
			}
		})
	}
}

// weekendTable has a peak window covering the whole Beijing Saturday, to
// show that a day is judged on the window's own calendar.
const weekendTable = `{"version": "w",
  "schedules": {"s": [{"effectiveFrom": "2026-01-01T00:00:00Z",
    "peak": [{"utcOffset": "+08:00", "days": ["Sat"], "from": "00:00", "to": "24:00"}]}]},
  "models": {"m": [{"effectiveFrom": "2026-01-01T00:00:00Z", "peakSchedule": "s",
    "peak": {"inputCacheHit": "0", "inputCacheMiss": "0", "output": "2"},
    "offPeak": {"inputCacheHit": "0", "inputCacheMiss": "0", "output": "1"}}]}}`

func TestBeijingDayStartsAtSixteenUTC(t *testing.T) {
	tab, err := Parse([]byte(weekendTable))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		at   string
		want money.Micros
	}{
		{"2026-08-28T15:59:59Z", 1_000_000}, // Friday 23:59:59 in Beijing
		{"2026-08-28T16:00:00Z", 2_000_000}, // Saturday 00:00 in Beijing
		{"2026-08-29T15:59:59Z", 2_000_000}, // Saturday 23:59:59 in Beijing
		{"2026-08-29T16:00:00Z", 1_000_000}, // Sunday in Beijing, Saturday in UTC
	}
	for _, c := range cases {
		got, err := tab.ModelCost("m", utc(c.at), million)
		if err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("cost at %s = %d, want %d", c.at, got, c.want)
		}
	}
}

func TestEffectiveDateSwitch(t *testing.T) {
	tab := mustLoad(t)
	cases := []struct {
		name  string
		model string
		at    string
		want  money.Micros
	}{
		{"before the first price", "deepseek-v4-flash", "2026-08-16T15:59:59Z", -1},
		{"first price starts (Sunday, off-peak)", "deepseek-v4-flash", "2026-08-16T16:00:00Z", 660_000},
		// 03:59:59 UTC is peak under the V4-Pro price; at 04:00 the V4.1
		// Flash price starts and the window closes together.
		{"V4-Pro last second", "deepseek-v4-pro", "2026-09-14T03:59:59Z", 3_960_000},
		{"billed as V4.1 Flash", "deepseek-v4-pro", "2026-09-14T04:00:00Z", 600_000},
		{"V4.1 Flash peak", "deepseek-v4-pro", "2026-09-15T02:00:00Z", 1_200_000},
		{"deepseek-flash", "deepseek-flash", "2026-09-15T02:00:00Z", 1_200_000},
		{"offline-demo priced like deepseek-v4-flash", "offline-demo", "2026-12-02T02:00:00Z", 1_320_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tab.ModelCost(c.model, utc(c.at), million)
			if c.want < 0 {
				if !errors.Is(err, ErrUnpriced) {
					t.Fatalf("err = %v, want ErrUnpriced", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("cost = %d, want %d", got, c.want)
			}
		})
	}
}

func TestModelCostSplitsThePrompt(t *testing.T) {
	tab := mustLoad(t)
	offPeak := utc("2026-08-18T12:00:00Z") // flash: hit 0.007, miss 0.22, out 0.66
	cases := []struct {
		name string
		u    llm.Usage
		want money.Micros
	}{
		{"nothing", llm.Usage{}, 0},
		{"one output token rounds up", llm.Usage{CompletionTokens: 1}, 1},
		{"one cached token rounds up", llm.Usage{PromptTokens: 1, CachedPromptTokens: 1}, 1},
		{"exact", llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000}, 220_000 + 660_000},
		{"hit and miss", llm.Usage{PromptTokens: 1_200_000, CachedPromptTokens: 1_000_000, CompletionTokens: 0}, 7_000 + 44_000},
		// Each part rounds up on its own: 0.007+0.22+0.66 µ$ → 3 µ$.
		{"each part rounds up", llm.Usage{PromptTokens: 2, CachedPromptTokens: 1, CompletionTokens: 1}, 3},
		{"cached above prompt clamps the miss at zero", llm.Usage{PromptTokens: 100_000, CachedPromptTokens: 150_000}, 1_050},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tab.ModelCost("deepseek-v4-flash", offPeak, c.u)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("cost = %d, want %d", got, c.want)
			}
		})
	}
}

func TestModelCostRejectsBadInput(t *testing.T) {
	tab := mustLoad(t)
	at := utc("2026-08-18T12:00:00Z")
	if _, err := tab.ModelCost("gpt-5", at, million); !errors.Is(err, ErrUnpriced) {
		t.Errorf("unpriced model: err = %v", err)
	}
	for _, u := range []llm.Usage{{PromptTokens: -1}, {CachedPromptTokens: -1}, {CompletionTokens: -1}, {CompletionTokens: maxTokens + 1}} {
		if _, err := tab.ModelCost("deepseek-v4-flash", at, u); err == nil {
			t.Errorf("usage %+v accepted", u)
		}
	}
}

func TestWorstCase(t *testing.T) {
	tab := mustLoad(t)
	cases := []struct {
		name           string
		model, at      string
		prompt, maxOut int64
		want           money.Micros
	}{
		// Off-peak instant, but priced at peak: a window may open mid-call.
		{"peak rates at an off-peak time", "deepseek-v4-flash", "2026-08-18T12:00:00Z", 1_000_000, 1_000_000, 440_000 + 1_320_000},
		{"whole prompt at the miss rate", "deepseek-v4-flash", "2026-08-18T02:00:00Z", 1_000, 0, 440},
		{"rounds up", "deepseek-v4-flash", "2026-08-18T02:00:00Z", 1, 1, 1 + 2}, // 0.44 and 1.32 µ$
		// Within the horizon of a price change the dearer price counts.
		{"across a price change", "deepseek-v4-pro", "2026-09-14T03:30:00Z", 1_000_000, 1_000_000, 1_320_000 + 3_960_000},
		{"after the price change", "deepseek-v4-pro", "2026-09-14T04:00:00Z", 1_000_000, 1_000_000, 300_000 + 1_200_000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := tab.WorstCaseAt(c.model, utc(c.at), c.prompt, c.maxOut)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("WorstCase = %d, want %d", got, c.want)
			}
			actual, err := tab.ModelCost(c.model, utc(c.at), llm.Usage{PromptTokens: c.prompt, CompletionTokens: c.maxOut})
			if err != nil {
				t.Fatal(err)
			}
			if actual > got {
				t.Errorf("the call costs %d, above its worst case %d", actual, got)
			}
		})
	}
	if _, err := tab.WorstCaseAt("deepseek-v4-flash", utc("2026-08-01T00:00:00Z"), 1, 1); !errors.Is(err, ErrUnpriced) {
		t.Errorf("before any price: err = %v, want ErrUnpriced", err)
	}
	if _, err := tab.WorstCaseAt("deepseek-v4-flash", utc("2026-08-18T00:00:00Z"), -1, 1); err == nil {
		t.Error("negative prompt accepted")
	}
}

func TestWorstCaseReadsTheClock(t *testing.T) {
	tab := mustLoad(t)
	before := tab.WithClock(func() time.Time { return utc("2026-09-14T03:30:00Z") })
	after := tab.WithClock(func() time.Time { return utc("2026-09-15T12:00:00Z") })
	b, err := before.WorstCase("deepseek-v4-pro", 1_000_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := after.WorstCase("deepseek-v4-pro", 1_000_000, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b != 1_320_000 || a != 300_000 {
		t.Errorf("WorstCase before/after the price change = %d/%d, want 1320000/300000", b, a)
	}
	if tab.Version() != before.Version() {
		t.Error("WithClock changed the table")
	}
}

func TestSearchAndSandboxCost(t *testing.T) {
	tab := mustLoad(t)
	search := []struct {
		provider string
		queries  int64
		want     money.Micros
	}{
		{"exa", 0, 0},
		{"exa", 1, 5_000},
		{"tavily", 3, 24_000},
	}
	for _, c := range search {
		got, err := tab.SearchCost(c.provider, c.queries)
		if err != nil || got != c.want {
			t.Errorf("SearchCost(%s, %d) = %d, %v; want %d", c.provider, c.queries, got, err, c.want)
		}
	}
	if _, err := tab.SearchCost("exa", -1); err == nil {
		t.Error("negative query count accepted")
	}

	sandbox := []struct {
		provider string
		millis   int64
		want     money.Micros
	}{
		{"e2b", 0, 0},
		{"e2b", 1, 1},          // 0.028 µ$ rounds up
		{"e2b", 1_000, 28},     // one second
		{"e2b", 35_714, 1_000}, // 999.992 µ$ rounds up
		{"e2b", 35_715, 1_001}, // 1000.02 µ$ rounds up
		{"e2b", 180_000, 5_040},
		{"local", 180_000, 0}, // priced, at zero
	}
	for _, c := range sandbox {
		got, err := tab.SandboxCost(c.provider, c.millis)
		if err != nil || got != c.want {
			t.Errorf("SandboxCost(%s, %d) = %d, %v; want %d", c.provider, c.millis, got, err, c.want)
		}
	}
	if _, err := tab.SandboxCost("e2b", -1); err == nil {
		t.Error("negative duration accepted")
	}
}

func TestFlatPrice(t *testing.T) {
	tab, err := Parse([]byte(flatTable))
	if err != nil {
		t.Fatal(err)
	}
	for _, at := range []string{"2026-01-01T00:00:00Z", "2026-08-18T02:00:00Z", "2030-01-01T00:00:00Z"} {
		got, err := tab.ModelCost("m", utc(at), llm.Usage{PromptTokens: 1_000_000, CachedPromptTokens: 500_000, CompletionTokens: 1_000_000})
		if err != nil {
			t.Fatal(err)
		}
		if want := money.Micros(50_000 + 500_000 + 2_000_000); got != want {
			t.Errorf("at %s: %d, want %d", at, got, want)
		}
	}
}

// The least useful reservation is the price table's worst case of an
// 8,192-token prompt and 2,048 output tokens: at the table's dearest
// deepseek-v4-flash rates (peak: 0.44 and 1.32 $/M), 3,605 + 2,704 µ$.
func TestMinUsefulCall(t *testing.T) {
	tab := mustLoad(t).WithClock(func() time.Time { return utc("2026-12-02T12:00:00Z") })
	got, err := tab.MinUsefulCall("deepseek-v4-flash")
	if err != nil || got != 3_605+2_704 {
		t.Fatalf("MinUsefulCall = %d, %v", got, err)
	}
	if _, err := tab.MinUsefulCall("unpriced"); !errors.Is(err, ErrUnpriced) {
		t.Errorf("an unpriced model: %v", err)
	}
}
