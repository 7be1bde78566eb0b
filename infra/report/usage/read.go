package usage

import (
	"context"

	"github.com/commonly/runtime/shared/store"
)

// Index is the report index's reader (store.Dynamo).
type Index interface {
	ReportDay(ctx context.Context, day string, each func(store.UserDay) error) error
}

var _ Index = (*store.Dynamo)(nil)

// Build reads every user-day of cfg's days from the index and returns
// the report: tablekeys.ReportShards Queries a day and a page per
// thousands of user-days, never the runs.
func Build(ctx context.Context, ix Index, cfg Config) (*Report, error) {
	b := NewBuilder(cfg)
	for _, day := range cfg.Days() {
		if err := ix.ReportDay(ctx, day, func(u store.UserDay) error { b.Add(u); return nil }); err != nil {
			return nil, err
		}
	}
	return b.Report(), nil
}
