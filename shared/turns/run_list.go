package turns

import (
	"context"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
)

// Pages of a user's runs (GET /v1/me/runs, GET /v1/users/{userId}/runs).
const (
	// DefaultRunsPage is a page's size when none is asked for.
	DefaultRunsPage = 20
	// MaxRunsPage bounds a page: its open runs are read in one
	// BatchGetItem, which takes at most 100 keys.
	MaxRunsPage = 100
)

// RunsQuery asks for a page of a user's runs, newest first.
type RunsQuery struct {
	// Cursor is the previous page's Next; empty for the newest runs.
	Cursor string
	// Limit is the most runs in the page; zero is DefaultRunsPage.
	Limit int
}

// RunPage is a page of a user's runs, newest first.
type RunPage struct {
	Runs []runs.Summary
	// Next is the cursor of the following page; empty after the last.
	Next string
}

// MyRuns is a page of the caller's own runs.
func (s *Service) MyRuns(ctx context.Context, c Caller, q RunsQuery) (*RunPage, error) {
	if c.ID == "" {
		return nil, ErrUnauthenticated
	}
	return s.listRuns(ctx, c.ID, q)
}

// UserRuns is a page of any user's runs, for the Commonly backend
// (support, the admin view).
func (s *Service) UserRuns(ctx context.Context, c Caller, userID string, q RunsQuery) (*RunPage, error) {
	if err := requireService(c); err != nil {
		return nil, err
	}
	if !tablekeys.ValidID(userID) {
		return nil, Invalid("userId", tablekeys.IDRule)
	}
	return s.listRuns(ctx, userID, q)
}

func (s *Service) listRuns(ctx context.Context, userID string, q RunsQuery) (*RunPage, error) {
	if q.Limit == 0 {
		q.Limit = DefaultRunsPage
	}
	if q.Limit < 1 || q.Limit > MaxRunsPage {
		return nil, Invalid("limit", "must be between 1 and %d", MaxRunsPage)
	}
	if q.Cursor != "" {
		// A cursor names a position, never a user: the page's user is the
		// caller's (or the service's choice), whatever cursor is sent.
		if _, _, ok := tablekeys.ParseUserRunsCursor(q.Cursor); !ok {
			return nil, Invalid("cursor", "is not a cursor this API gave")
		}
	}
	page, err := s.store.ListRuns(ctx, userID, q.Cursor, q.Limit)
	if err != nil {
		return nil, wrapUnavailable("list runs", err)
	}
	if page.Runs == nil {
		page.Runs = []runs.Summary{}
	}
	return &page, nil
}
