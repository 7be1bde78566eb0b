package tablekeys

import (
	"encoding/base64"
	"strings"
	"time"
)

// A user's runs, newest first (GET /v1/me/runs): every run carries
// UserRunsSK = UserRunsSort(createdAt) beside its own userId, so the GSI
// UserRunsIndex (hash userId, range userRunsAt) lists a user's runs in
// one Query, read backwards, a page at a time.
//
// The partition is the user alone, unsharded: every run puts its entry
// once (its admission) and changes it once (its final write, which adds
// UserRunsSummary), so a user's partition of the index takes two writes
// a run, while the same user's state-table partition (USER#<userId>)
// already takes the admission transaction's two units on the day's
// counter, and more (refunds, ledgers), for every run: the index never
// makes a user's key hotter than one the stack already has, and the
// plan's ceiling bounds both (200 turns a pro user-day; docs/scale.md).
// One partition per user also keeps a page one Query, not a merge of
// shards.
//
// The index projects UserRunsSummary only (and the keys): the summary
// is written by a run's final write and never changed after, so claims,
// checkpoints and event writes, which rewrite the run, cost the index
// nothing, and a page of finished runs is read from the index alone (a
// run's item holds its events and steps, tens of KB; its summary is a
// few hundred bytes). A page's open runs, which have no summary yet, are
// read from the table in one BatchGetItem.
const (
	UserRunsIndex = "userRuns"
	// UserRunsPK is the run's own userId attribute.
	UserRunsPK = "userId"
	UserRunsSK = "userRunsAt"
	// UserRunsSummary is the finished run's summary (status, cost,
	// tokens, times), written with its final status.
	UserRunsSummary = "runSummary"
)

// UserRunsSort is a run's sort value on the user-runs index: its
// admission time, fixed-width so that string order is time order (the
// form of OpenSort; ParseSort reads it back).
func UserRunsSort(createdAt time.Time) string { return createdAt.UTC().Format(sortLayout) }

// UserRunsCursor is the opaque cursor of a page of a user's runs that
// ends at the run runID sorted at sort: the index's last evaluated key
// without its user, who comes from the caller, never from the cursor.
func UserRunsCursor(sort, runID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(sort + "#" + runID))
}

// ParseUserRunsCursor reads a UserRunsCursor back; ok is false for
// anything UserRunsCursor could not have made.
func ParseUserRunsCursor(cursor string) (sort, runID string, ok bool) {
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return "", "", false
	}
	sort, runID, found := strings.Cut(string(b), "#")
	if !found || !ValidID(runID) {
		return "", "", false
	}
	if _, err := ParseSort(sort); err != nil {
		return "", "", false
	}
	return sort, runID, true
}
