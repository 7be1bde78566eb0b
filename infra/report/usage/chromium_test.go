package usage_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/commonly/runtime/infra/report/usage"
	"github.com/commonly/runtime/internal/chromiumtest"
	"github.com/commonly/runtime/shared/money"
)

// drawn is what the page shows of one chart, read back from the DOM.
type drawn struct {
	ID      string             `json:"id"`
	Total   int64              `json:"total"`
	Sum     int64              `json:"sum"`
	Bars    int                `json:"bars"`
	Flat    int                `json:"flat"` // bars with a value but no height
	Width   float64            `json:"width"`
	Series  map[string]int64   `json:"series"`
	ByX     map[string]int64   `json:"byX"`
	Markers map[string]float64 `json:"markers"`
}

const readCharts = `Array.from(document.querySelectorAll('svg.chart')).map(svg => {
  const bars = Array.from(svg.querySelectorAll('rect.bar'));
  const series = {}, markers = {}, byX = {};
  let sum = 0, flat = 0;
  for (const b of bars) {
    const v = Number(b.dataset.value); sum += v;
    if (b.dataset.series) series[b.dataset.series] = (series[b.dataset.series] || 0) + v;
    else byX[b.dataset.x] = (byX[b.dataset.x] || 0) + v;
    if (v > 0 && !(b.getBoundingClientRect().height > 0)) flat++;
  }
  for (const m of svg.querySelectorAll('line.marker')) markers[m.dataset.label] = Number(m.dataset.value);
  return {id: svg.id, total: Number(svg.dataset.total), sum, bars: bars.length, flat, width: svg.getBoundingClientRect().width, series, markers, byX};
})`

// The page, rendered from a day of local runs, opened in headless
// Chromium as a person would: every chart is drawn with the numbers the
// runs give, and the console stays clean. The screenshot is kept in the
// test's artifact directory (go test -artifacts).
func TestReportInChromium(t *testing.T) {
	ctx := chromiumtest.New(t, 900, 1200, 90*time.Second)
	d := makeDayOfRuns(t)
	dir := t.TempDir()
	cfg := reportConfig(d.day, filepath.Join(dir, "index.html"))
	r, err := usage.Build(context.Background(), d.st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	page, csvPath, err := r.Write()
	if err != nil {
		t.Fatal(err)
	}
	html, _ := os.ReadFile(page)
	for _, bad := range []string{"<script", "http://", "https://", "@import", "url(", "ZgotmplZ"} {
		if strings.Contains(string(html), bad) {
			t.Errorf("the page holds %q: it must fetch nothing and render every value", bad)
		}
	}
	if st, err := os.Stat(csvPath); err != nil || st.Size() == 0 {
		t.Errorf("no CSV beside the page: %v", err)
	}

	// Every console message, from before the page loads to the end.
	var mu sync.Mutex
	var consoleErrors []string
	cctx, stopConsole := context.WithCancel(ctx)
	messages := chromedp.Console(cctx)
	listened := make(chan struct{})
	go func() {
		defer close(listened)
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == "error" || m.Type == "warning" || m.Type == chromedp.ConsoleException || m.Type == "assert" {
				mu.Lock()
				consoleErrors = append(consoleErrors, fmt.Sprintf("%s: %s", m.Type, m.Text))
				mu.Unlock()
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+page), chromedp.WaitVisible("#headline-per-1000")); err != nil {
		t.Fatal(err)
	}
	charts, err := chromedp.Run(ctx, chromedp.Evaluate[[]drawn](readCharts))
	if err != nil {
		t.Fatal(err)
	}
	headline, err := chromedp.Run(ctx, chromedp.Text("#headline-per-1000"))
	if err != nil {
		t.Fatal(err)
	}
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	stopConsole()
	<-listened
	out := t.ArtifactDir()
	if err := os.WriteFile(filepath.Join(out, "report.png"), shot, 0o644); err != nil {
		t.Fatal(err)
	}
	_ = os.WriteFile(filepath.Join(out, "index.html"), html, 0o644)
	t.Logf("screenshot: %s", filepath.Join(out, "report.png"))

	mu.Lock()
	if len(consoleErrors) > 0 {
		t.Errorf("console: %v", consoleErrors)
	}
	mu.Unlock()

	w := expect(d)
	want := map[string]int64{
		"turns-by-engine": w.turns, "turns-by-plan": w.turns, "cost-by-part": int64(w.cost), "cost-by-engine": int64(w.cost),
		"errors-by-kind": sumOf(w.errors), "cost-per-turn": w.turns, "tokens-per-turn": w.turns, "duration": w.turns,
		"userday-cost": int64(len(w.userDays)),
	}
	for p, n := range w.userDaysByPlan() {
		want["turns-per-userday-"+p] = n
	}
	seen := map[string]bool{}
	for _, c := range charts {
		seen[c.ID] = true
		n, ok := want[c.ID]
		switch {
		case !ok:
			t.Errorf("chart %s: not checked by this test", c.ID)
		case c.Sum != n || c.Total != n:
			t.Errorf("chart %s draws %d (total %d), the runs give %d", c.ID, c.Sum, c.Total, n)
		case c.Bars == 0 || c.Flat > 0 || c.Width < 100:
			t.Errorf("chart %s: %d bars, %d without height, %.0f px wide", c.ID, c.Bars, c.Flat, c.Width)
		}
	}
	for id := range want {
		if !seen[id] {
			t.Errorf("chart %s is missing", id)
		}
	}
	for _, c := range charts {
		switch c.ID {
		case "turns-by-engine":
			equalMaps(t, "drawn turns by engine", c.Series, w.byEngine)
		case "turns-by-plan":
			equalMaps(t, "drawn turns by plan", c.Series, w.byPlan)
		case "errors-by-kind":
			equalMaps(t, "drawn errors by kind", c.Series, w.errors)
		case "cost-per-turn", "tokens-per-turn", "duration":
			equalMaps(t, "drawn "+c.ID+" by bucket", c.ByX, w.buckets[c.ID])
		case "userday-cost":
			equalMaps(t, "drawn user-day cost by bucket", c.ByX, w.buckets[c.ID])
			if c.Markers["alarm"] != float64(cfg.Threshold) || c.Markers["cap"] != float64(cfg.Cap) {
				t.Errorf("user-day cost lines %v, want alarm %d and cap %d", c.Markers, cfg.Threshold, cfg.Cap)
			}
		case "turns-per-userday-free", "turns-per-userday-pro":
			equalMaps(t, "drawn "+c.ID, c.ByX, w.buckets[c.ID])
		}
		switch c.ID {
		case "turns-per-userday-free":
			if c.Markers["ceiling"] != 4 {
				t.Errorf("free ceiling line %v, want 4", c.Markers)
			}
		}
	}
	per1000 := (int64(w.cost)*1000 + w.turns/2) / w.turns
	wantText := fmt.Sprintf("1,000 turns cost $%.4f.", float64(per1000)/1e6)
	if per1000 < 10_000 {
		wantText = "1,000 turns cost " + money.Micros(per1000).String() + "."
	}
	if headline != wantText {
		t.Errorf("headline %q, want %q", headline, wantText)
	}
}

func sumOf(m map[string]int64) int64 {
	var n int64
	for _, v := range m {
		n += v
	}
	return n
}
