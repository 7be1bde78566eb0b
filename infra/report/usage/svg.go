package usage

import (
	"fmt"
	"html"
	"html/template"
	"strings"

	"github.com/commonly/runtime/shared/ledger"
)

// Charts are hand-written inline SVG: the page must fetch nothing, and
// the few shapes needed (stacked bars, a histogram with marker lines) do
// not justify a charting library's script. Every bar carries its value
// (data-value) and the chart its total (data-total), so a test reads
// back the numbers drawn.

const (
	chartW, chartH         = 720.0, 260.0
	padL, padR, padT, padB = 64.0, 16.0, 16.0, 48.0
)

var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// series is one stack of a stacked bar chart: a value per category.
type series struct {
	Name   string
	Values []int64
}

// chart is one figure of the page.
type chart struct {
	ID, Title, Note string
	SVG             template.HTML
	Legend          []legendItem
}

type legendItem struct {
	Name, Color string
}

// stackedBars draws categories (days) as bars stacked by series.
func stackedBars(id string, cats []string, ss []series, format func(int64) string) (template.HTML, []legendItem) {
	var total int64
	top := int64(0)
	for i := range cats {
		var h int64
		for _, s := range ss {
			h += s.Values[i]
			total += s.Values[i]
		}
		top = max(top, h)
	}
	var b strings.Builder
	open(&b, id, total)
	if total == 0 {
		b.WriteString(noData)
	}
	scale := axisY(&b, top, format)
	slot := (chartW - padL - padR) / float64(max(len(cats), 1))
	bw := slot * 0.7
	for i, c := range cats {
		x := padL + slot*float64(i) + (slot-bw)/2
		y := chartH - padB
		for j, s := range ss {
			v := s.Values[i]
			if v == 0 {
				continue
			}
			h := float64(v) * scale
			y -= h
			fmt.Fprintf(&b, `<rect class="bar" data-series="%s" data-x="%s" data-value="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %s</title></rect>`,
				esc(s.Name), esc(c), v, x, y, bw, h, palette[j%len(palette)], esc(c), esc(s.Name), esc(format(v)))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`, x+bw/2, chartH-padB+16, esc(shortDay(c)))
	}
	b.WriteString(`</svg>`)
	legend := make([]legendItem, len(ss))
	for j, s := range ss {
		legend[j] = legendItem{s.Name, palette[j%len(palette)]}
	}
	return template.HTML(b.String()), legend
}

// marker is a vertical line drawn on a histogram at a value.
type marker struct {
	Label string
	Value int64
	Color string
}

// histogram draws bucket counts over a log axis (ledger's buckets), or a
// linear one when linear is set (counts[i] is the count of value i).
func histogram(id string, counts map[int]int64, linear bool, format func(int64) string, markers []marker) template.HTML {
	var total int64
	lo, hi, top := 1<<30, -1, int64(0)
	for k, c := range counts {
		if c == 0 {
			continue
		}
		total += c
		lo, hi, top = min(lo, k), max(hi, k), max(top, c)
	}
	for _, m := range markers {
		k := m.bucket(linear)
		lo, hi = min(lo, k), max(hi, k)
	}
	var b strings.Builder
	open(&b, id, total)
	if total == 0 {
		b.WriteString(noData + `</svg>`)
		return template.HTML(b.String())
	}
	scale := axisY(&b, top, func(v int64) string { return fmt.Sprint(v) })
	n := hi - lo + 1
	slot := (chartW - padL - padR) / float64(n)
	xOf := func(k int) float64 { return padL + slot*float64(k-lo) }
	for k := lo; k <= hi; k++ {
		c := counts[k]
		upper := int64(k)
		if !linear {
			upper = ledger.BucketUpper(k)
		}
		if c > 0 {
			h := float64(c) * scale
			fmt.Fprintf(&b, `<rect class="bar" data-x="%d" data-value="%d" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>≤ %s: %d</title></rect>`,
				upper, c, xOf(k)+slot*0.1, chartH-padB-h, slot*0.8, h, palette[0], esc(format(upper)), c)
		}
	}
	// A few tick labels along the axis.
	step := max(n/6, 1)
	for k := lo; k <= hi; k += step {
		upper := int64(k)
		if !linear {
			upper = ledger.BucketUpper(k)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle" class="tick">%s</text>`, xOf(k)+slot/2, chartH-padB+16, esc(format(upper)))
	}
	for i, m := range markers {
		x := xOf(m.bucket(linear)) + slot/2
		fmt.Fprintf(&b, `<line class="marker" data-label="%s" data-value="%d" x1="%.1f" x2="%.1f" y1="%.1f" y2="%.1f" stroke="%s" stroke-width="2" stroke-dasharray="5 3"/>`,
			esc(m.Label), m.Value, x, x, padT, chartH-padB, m.Color)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="mlabel" fill="%s">%s %s</text>`, x+4, padT+12+14*float64(i), m.Color, esc(m.Label), esc(format(m.Value)))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func (m marker) bucket(linear bool) int {
	if linear {
		return int(m.Value)
	}
	return ledger.Bucket(m.Value)
}

func open(b *strings.Builder, id string, total int64) {
	fmt.Fprintf(b, `<svg id="%s" class="chart" data-total="%d" viewBox="0 0 %.0f %.0f" width="%.0f" height="%.0f" role="img">`,
		esc(id), total, chartW, chartH, chartW, chartH)
}

// axisY draws the value axis up to top and returns pixels per unit.
func axisY(b *strings.Builder, top int64, format func(int64) string) float64 {
	fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.0f" y2="%.0f" stroke="#888"/>`, padL, chartW-padR, chartH-padB, chartH-padB)
	if top <= 0 {
		return 0
	}
	plot := chartH - padT - padB
	for _, f := range []float64{0.5, 1} {
		v := int64(float64(top) * f)
		y := chartH - padB - plot*f
		fmt.Fprintf(b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end" class="tick">%s</text>`,
			padL, chartW-padR, y, y, padL-4, y+4, esc(format(v)))
	}
	return plot / float64(top)
}

const noData = `<text x="360" y="130" text-anchor="middle" class="empty">no data</text>`

func esc(s string) string { return html.EscapeString(s) }

// shortDay is "10-03" of "2026-10-03".
func shortDay(d string) string {
	if len(d) == 10 {
		return d[5:]
	}
	return d
}
