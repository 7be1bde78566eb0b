// Package tablekeys builds every DynamoDB key the runtime uses, so the layout
// of the tables is written down in one place.
//
// The state table (STATE_TABLE) has a composite key pk/sk:
//
//	install          INSTALL#<installId>        INSTALL
//	user plan        PLAN#<userId>              PLAN
//	daily usage      USER#<userId>              DAY#<yyyy-mm-dd>
//	cost ledger      USER#<userId>              LEDGER#<yyyy-mm-dd>
//	idempotency key  IDEM#<callerId>#<installId>#<sha256(key)>  IDEM
//	sandbox          SANDBOX#<sandboxId>        SANDBOX
//	sandbox cap slot SANDBOXCAP#<shard>         SLOT#<nnnn>   (shards.go)
//	stream cap slot  STREAMS#<userId>           SLOT#<nnnn>   (shards.go)
//	turn journal     JOURNAL#<runId>            E#<nnnn>      (one item per entry)
//
// Live sandboxes are also indexed on the sparse GSI "live" (gsi1pk =
// "SANDBOX#live#<shard>", gsi1sk = expiresAt, see LiveSort and shards.go) so the reaper can query the
// expired ones without a scan, and every sandbox record on the GSI
// "runSandboxes" (runId, sandboxId: the record's own attributes; no other
// item has both) so a run's sandboxes are one Query.
//
// Cost ledgers are also on the sparse GSI "reportDays" (rptPk =
// "RPT#<day>#<shard>", rptSk = userId; report.go), projecting the
// usage report's digest, so a report lists a day's user-days without a
// scan and no single key takes every ledger write.
//
// The runs table (RUNS_TABLE) holds one AgentRun per item under runId; its
// stream feeds the cost alarm. Open runs (queued or running) are also on
// the sparse GSI "open" (openPk = "RUN#open#<shard>", openSince =
// createdAt, see OpenSort and shards.go), keys only: every write of an open run carries the two
// attributes and every final write leaves them out, so the index holds
// exactly the open runs and the reaper finds the abandoned ones, oldest
// first, without a scan. Every run is also on the GSI "userRuns" (its
// userId, userRunsAt = its admission time; userruns.go), projecting the
// summary its final write adds, so a user's runs are listed newest first
// without a scan.
//
// A plan has a partition of its own, not its user's: IAM conditions
// writes on the partition key only (dynamodb:LeadingKeys), so a role that
// writes a user's days and ledgers (the alarm's) would otherwise be able to
// write the plan too.
//
// A native turn's journal (what a worker that takes the run over needs to
// go on: the conversation so far) lives in the state table, not beside the
// run: it holds the pod's context and the tools' results, so it expires a
// day after the run was admitted rather than with the run's 90 days, and
// the runs table's stream (the alarm's) never sees it. Its entries are
// items of their own, so that none nears DynamoDB's 400 KB.
//
// Both tables expire items through DynamoDB's TTL on the attribute TTL
// (epoch seconds): journal entries a day after their run's admission, idempotency records a day after they were made, sandbox
// records a day after their lifetime, runs, daily usage and cost ledgers
// Retention after their day. Plans and installs never expire.
package tablekeys

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/commonly/runtime/shared/utcday"
)

// Attribute names of the state table's keys and index.
const (
	PK        = "pk"
	SK        = "sk"
	GSI1PK    = "gsi1pk"
	GSI1SK    = "gsi1sk"
	LiveIndex = "live"
	RunID     = "runId"
	// SandboxID is a sandbox record's id attribute, the sort key of
	// RunSandboxesIndex (hash RunID).
	SandboxID         = "sandboxId"
	RunSandboxesIndex = "runSandboxes"
	// TTL is the attribute both tables' time to live reads (epoch seconds).
	TTL = "ttl"
	// LiveValue is the live index's partition value before its shard
	// (LivePartition).
	LiveValue    = "SANDBOX#live"
	skInstall    = "INSTALL"
	skPlan       = "PLAN"
	skIdem       = "IDEM"
	skSandbox    = "SANDBOX"
	dayPrefix    = "DAY#"
	ledgerPrefix = "LEDGER#"
	userPrefix   = "USER#"
	planPrefix   = "PLAN#"
	// journalPrefix and journalEntryPrefix make the journal's keys.
	journalPrefix      = "JOURNAL#"
	journalEntryPrefix = "E#"
)

// Retention is how long runs, daily usage and ledgers are kept after their UTC day:
// long enough for support and the monthly invoice, short enough that user
// messages do not linger.
const Retention = 90 * 24 * time.Hour

// ExpiresAfterDay is the TTL value of an item kept Retention after the end
// of the UTC day t falls on (a run's admission, a usage counter's day).
func ExpiresAfterDay(t time.Time) int64 {
	return utcday.ResetsAt(t).Add(Retention).Unix()
}

// Key is a composite state-table key.
type Key struct {
	PK string
	SK string
}

// Install is the key of a hosted install.
func Install(installID string) Key { return Key{"INSTALL#" + installID, skInstall} }

// Plan is the key of a user's plan, in a partition of its own (see the
// package comment).
func Plan(userID string) Key { return Key{planPrefix + userID, skPlan} }

// LegacyPlan is the key a user's plan had before plans had a partition of
// their own (USER#<userId>, PLAN). Only the plans migration
// (infra/migrate/plans) reads it.
func LegacyPlan(userID string) Key { return Key{userPrefix + userID, skPlan} }

// LegacyPlanUser is the user whose LegacyPlan k is, if k is one.
func LegacyPlanUser(k Key) (string, bool) {
	id, ok := strings.CutPrefix(k.PK, userPrefix)
	if !ok || k.SK != skPlan || !ValidID(id) {
		return "", false
	}
	return id, true
}

// UsageOnDay is the key of a user's counters for a day already computed
// with utcday.Of (the day recorded on a run).
func UsageOnDay(userID, day string) Key { return Key{userPrefix + userID, dayPrefix + day} }

// Ledger is the key of the alarm function's cost ledger of a user's UTC
// day (a day computed with utcday.Of, the day recorded on a run): which
// runs' costs that day's usage counts, so a stream record is counted once.
func Ledger(userID, day string) Key { return Key{userPrefix + userID, ledgerPrefix + day} }

// Idempotency is the key of an Idempotency-Key record. The key is scoped
// to the caller and the install, so two callers cannot collide, and it is
// hashed so a client's key (any bytes, any length) always fits.
func Idempotency(callerID, installID, clientKey string) Key {
	sum := sha256.Sum256([]byte(clientKey))
	return Key{"IDEM#" + callerID + "#" + installID + "#" + hex.EncodeToString(sum[:]), skIdem}
}

// Journal is the key of entry seq (from 0) of a run's journal; entries
// sort in order (JournalEntrySort) up to MaxJournalEntries.
func Journal(runID string, seq int) Key {
	return Key{JournalPartition(runID), JournalEntrySort(seq)}
}

// JournalPartition is the partition of a run's journal: one Query reads it.
func JournalPartition(runID string) string { return journalPrefix + runID }

// JournalEntrySort is the sort key of entry seq: fixed-width, so that
// string order is entry order.
func JournalEntrySort(seq int) string { return fmt.Sprintf("%s%04d", journalEntryPrefix, seq) }

// JournalSeq reads an entry's number back from its sort key.
func JournalSeq(sk string) (int, bool) {
	digits, ok := strings.CutPrefix(sk, journalEntryPrefix)
	if !ok || len(digits) != 4 {
		return 0, false
	}
	n := 0
	for _, c := range digits {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// MaxJournalEntries bounds a journal: JournalEntrySort's width.
const MaxJournalEntries = 10_000

// JournalRetention is how long a journal entry is kept after its run's
// admission: a run is final long before (turns.RunMaxLife), and the
// conversation must not outlive its use.
const JournalRetention = 24 * time.Hour

// Sandbox is the key of a sandbox record.
func Sandbox(sandboxID string) Key { return Key{"SANDBOX#" + sandboxID, skSandbox} }

// LiveSort is the sort value of a live sandbox on the live index: its
// expiry, in a form that sorts chronologically as a string.
func LiveSort(expiresAt time.Time) string { return expiresAt.UTC().Format(sortLayout) }

// Attribute names and the partition value (before its shard,
// OpenPartition) of the runs table's open-runs index. An open run costs
// the index two writes (its admission and its final write; KEYS_ONLY, so
// claims and checkpoints cost none); the shards keep each partition value
// under its 1,000 writes a second (shards.go).
const (
	OpenIndex = "open"
	OpenPK    = "openPk"
	OpenSK    = "openSince"
	OpenValue = "RUN#open"
)

// OpenSort is the sort value of an open run on the open index: its
// admission time, in a form that sorts chronologically as a string (a
// run's createdAt attribute is RFC 3339 with trimmed fractions, which
// does not).
func OpenSort(createdAt time.Time) string { return createdAt.UTC().Format(sortLayout) }

// ParseSort reads back a LiveSort or OpenSort value.
func ParseSort(v string) (time.Time, error) { return time.Parse(sortLayout, v) }

// sortLayout is fixed-width so that string order is time order (RFC 3339
// with trimmed fractions is not).
const sortLayout = "2006-01-02T15:04:05.000000000Z"

// MaxIDBytes bounds an id: DynamoDB allows far longer keys, and no id the
// Commonly backend makes comes near it.
const MaxIDBytes = 128

// IDRule says, for an error message, what ValidID accepts.
const IDRule = "must be 1-128 bytes of UTF-8, not '.' or '..', without '#' or control, format or bidirectional characters"

// ValidID reports whether an identifier taken from a path or a body can be
// used inside a key and shown back safely: 1 to MaxIDBytes bytes of valid
// UTF-8 (DynamoDB refuses anything else in a key, which would reach the
// caller as a 503 instead of a 400), not "." or ".." (ids become URL path
// segments), free of the '#' separator, so no id can forge another key,
// and of control characters, format characters (bidirectional overrides
// and isolates, zero-width characters, the BOM) and line or paragraph
// separators, which would make an id read as another in a log or a UI.
func ValidID(id string) bool {
	if id == "" || len(id) > MaxIDBytes || id == "." || id == ".." || !utf8.ValidString(id) {
		return false
	}
	return !strings.ContainsFunc(id, func(r rune) bool {
		return r == '#' || unicode.In(r, unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp)
	})
}
