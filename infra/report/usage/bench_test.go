package usage_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/infra/report/usage"
	"github.com/commonly/runtime/internal/dynamodblocal"
	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/store"
)

// benchUserDays is how many user-days the benchmark's day holds.
const benchUserDays = 1000

// syntheticBook is a user-day of n finished turns with the spread of
// costs, tokens, durations and outcomes a real day has, so its digest
// is as large as a real one.
func syntheticBook(user, n int) ledger.Book {
	b := ledger.Book{Rev: 1, Runs: map[string]ledger.Counted{}}
	for i := range n {
		k := int64(user*31 + i*17)
		f := &ledger.Facts{Engine: "native", Plan: "free", Input: money.Micros(200 + k%900), Cached: money.Micros(k % 40), Output: money.Micros(300 + k%2500),
			Search: money.Micros((k % 3) * 5000), TokensIn: 1500 + k%9000, TokensCached: k % 1000, TokensOut: 100 + k%1500, DurationMs: 800 + k%30_000}
		if k%7 == 0 {
			f.CodeRuns = 1 + k%3
			f.Sandbox = money.Micros(k % 700)
		}
		if k%23 == 0 {
			f.Kind = "llm_error"
		}
		if user%5 == 0 {
			f.Plan = "pro"
		}
		f.Model = f.Input + f.Cached + f.Output
		cost := f.Model + f.Search + f.Sandbox
		b.Runs[fmt.Sprintf("run-%d-%d", user, i)] = ledger.Counted{CostMicros: cost, Seq: fmt.Sprint(1000 + i), Facts: f}
		b.CostMicros += cost
	}
	return b
}

// BenchmarkReportEmbeddedDay reads a day of user-days through the report
// index of the embedded DynamoDB (the real store, SDK client and
// decoding, every shard's Query) and folds them into a report. It
// reports the digest's size a user-day, which sets the pages a report
// reads in AWS; its time a user-day is the embedded server's, whose
// Query scans its whole table (minidyn), so it is no estimate of AWS:
// BenchmarkReportFold and docs/report.md make that.
func BenchmarkReportEmbeddedDay(b *testing.B) {
	ctx := context.Background()
	db, err := dynamodblocal.StartWithTables(ctx, "127.0.0.1:0", tables)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	st, err := store.New(store.Config{DB: db.Client(), Tables: tables})
	if err != nil {
		b.Fatal(err)
	}
	const day = "2026-10-03"
	var digestBytes int
	for u := range benchUserDays {
		book := syntheticBook(u, 1+u%30)
		d := ledger.DigestOf(book)
		if item, err := attributevalue.MarshalMap(d); err == nil {
			digestBytes += int(dynamodblocal.ItemSize(item))
		}
		// ErrConflict: the SDK's retry of a write the server had applied
		// (its connection dropped), as the ledger meets it too.
		err := st.WriteDay(ctx, ledger.Write{Key: ledger.DayKey{UserID: fmt.Sprintf("user-%06d", u), Day: day}, Next: book})
		if err != nil && !errors.Is(err, ledger.ErrConflict) {
			b.Fatal(err)
		}
	}
	cfg := reportConfig(day, b.TempDir()+"/index.html")
	var r *usage.Report
	start := time.Now()
	for b.Loop() {
		if r, err = usage.Build(ctx, st, cfg); err != nil {
			b.Fatal(err)
		}
	}
	perUserDay := time.Since(start) / time.Duration(b.N*benchUserDays)
	if r.Total.UserDays != benchUserDays {
		b.Fatalf("read %d user-days, wrote %d", r.Total.UserDays, benchUserDays)
	}
	b.ReportMetric(float64(perUserDay.Nanoseconds()), "ns/user-day")
	b.ReportMetric(float64(digestBytes)/benchUserDays, "digest-bytes/user-day")
}

// BenchmarkReportFold is the report command's own work a user-day: an
// index item decoded (store.DecodeUserDay) and folded into the figures,
// without the service. With the pages' latency (docs/report.md) it gives
// the estimate of a week of a million users' user-days.
func BenchmarkReportFold(b *testing.B) {
	const day = "2026-10-03"
	items := make([]map[string]types.AttributeValue, 1000)
	for u := range items {
		item, err := attributevalue.MarshalMap(map[string]any{"rptPk": "RPT#" + day + "#07", "rptSk": fmt.Sprintf("user-%06d", u), "rpt": ledger.DigestOf(syntheticBook(u, 1+u%30))})
		if err != nil {
			b.Fatal(err)
		}
		items[u] = item
	}
	bld := usage.NewBuilder(reportConfig(day, b.TempDir()+"/index.html"))
	n := 0
	for b.Loop() {
		u, err := store.DecodeUserDay(day, items[n%len(items)])
		if err != nil {
			b.Fatal(err)
		}
		bld.Add(u)
		n++
	}
	if r := bld.Report(); r.Total.UserDays != int64(n) {
		b.Fatalf("folded %d of %d", r.Total.UserDays, n)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n)*7_000_000/60e9, "min/week-of-1M-users")
}
