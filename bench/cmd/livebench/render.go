package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/turns"
)

// rcu is a strongly consistent read's read units: one per 4 KB.
func rcu(size int) int { return (size + 4095) / 4096 }

// render is the results as a markdown table, with what was measured.
func render(results []result, turnsN, words int, gap time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d turns a row, each answer %d words streamed one a %s; text coalesced %s, events flushed %s (the deployed intervals)\n\n",
		turnsN, words, gap, runs.TextInterval, turns.EventFlushDelay)
	b.WriteString("| poll | p50 | p95 | p99 | max | worker writes a s of streaming | polls a min | item read (mean) | read units a poll (mean) | read units a min, one client |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range results {
		units, bytes := 0, 0
		for _, n := range r.reads {
			units += rcu(n)
			bytes += n
		}
		reads := max(len(r.reads), 1)
		perMin := float64(len(r.reads)) / r.watching.Minutes()
		writes := float64(r.calls["UpdateItem"]-int64(turnsN)) / r.streaming.Seconds() // less each turn's claim
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %.1f | %.0f | %.1f KB | %.2f | %.0f |\n", r.poll,
			ms(pct(r.latencies, 50)), ms(pct(r.latencies, 95)), ms(pct(r.latencies, 99)), ms(pct(r.latencies, 100)),
			writes, perMin, float64(bytes)/float64(reads)/1024, float64(units)/float64(reads), perMin*float64(units)/float64(reads))
	}
	b.WriteString("\nWhere the time goes, p50 / p95: up to the write that carried the word (held, coalesced, flushed, written); after it (polled, read, sent).\n\n")
	b.WriteString("| poll | to the write | after the write |\n|---|---:|---:|\n")
	for _, r := range results {
		fmt.Fprintf(&b, "| %s | %s / %s | %s / %s |\n", r.poll, ms(pct(r.toWrite, 50)), ms(pct(r.toWrite, 95)), ms(pct(r.fromWrite, 50)), ms(pct(r.fromWrite, 95)))
	}
	b.WriteString("\nThe worker's DynamoDB calls a turn: ")
	if len(results) > 0 {
		b.WriteString(results[0].calls.PerTurn(turnsN))
	}
	b.WriteString(".\n")
	return b.String()
}

func ms(d time.Duration) string { return fmt.Sprintf("%d ms", d.Milliseconds()) }
