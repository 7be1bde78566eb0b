package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// The run item keeps its lease (runs.Lease) as attributes of their own,
// so that conditions can read them: the attempt that holds the run, the
// claim's token, when the lease lapses, the attempt's start, the run's
// working time and the attempt that last renewed it.
const (
	attrAttempt     = "attempt"
	attrMaxAttempts = "maxAttempts"
	attrLeaseToken  = "leaseToken"
	attrLeaseUntil  = "leaseUntilMs"
	attrStartedMs   = "attemptStartedMs"
	attrWorkedMs    = "workedMs"
	attrWrittenBy   = "writtenBy"
	// attrPrevUntil is the lease as the attempt a takeover replaced left
	// it: when that attempt last wrote (LostAttempt.LastWriteAt).
	attrPrevUntil = "prevLeaseUntilMs"
	// attrCloser is a final write's own token: a final write whose
	// response was lost finds it on the item its retry was refused by.
	attrCloser = "closer"
	// attrRedispatched is when the reaper last re-dispatched the run.
	attrRedispatched = "redispatchedMs"
	// attrCancel is when a stop of the run was asked for.
	attrCancel = "cancelRequestedAt"
)

// newToken is a claim's or a final write's token: random, so no two
// writers share one.
func newToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b[:])
}

// ClaimRun gives the run to a worker under a new lease, with the next
// attempt: a queued run within turns.ClaimWindow of its admission (its
// first claim), or a running run whose lease lapsed and that has
// attempts left (a takeover). Otherwise it returns the run as it stands
// with ErrNotClaimable. A claim whose response was lost, and which the
// SDK sent again, finds its own token on the run it is refused by, and is
// a claim.
func (d *Dynamo) ClaimRun(ctx context.Context, runID string, at time.Time) (*runs.Run, error) {
	token, nowMs := newToken(), at.UnixMilli()
	out, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(d.tables.Runs),
		Key:       runKey(runID),
		UpdateExpression: aws.String("SET #s = :running, #at = if_not_exists(#at, :at), #att = if_not_exists(#att, :zero) + :one, " +
			"#tok = :tok, #prev = if_not_exists(#until, :zero), #until = :until, #sms = :now, " +
			"#worked = if_not_exists(#worked, :zero), #by = if_not_exists(#by, :one)"),
		ConditionExpression: aws.String("(#s = :queued AND (attribute_not_exists(#since) OR #since >= :oldest)) OR " +
			"(#s = :running AND #until < :now AND #att < #max AND attribute_not_exists(#cancel))"),
		ExpressionAttributeNames: map[string]string{
			"#s": "status", "#at": "startedAt", "#since": tablekeys.OpenSK, "#att": attrAttempt, "#max": attrMaxAttempts, "#cancel": attrCancel,
			"#tok": attrLeaseToken, "#until": attrLeaseUntil, "#prev": attrPrevUntil, "#sms": attrStartedMs,
			"#worked": attrWorkedMs, "#by": attrWrittenBy,
		},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":running": str(string(runs.StatusRunning)), ":queued": str(string(runs.StatusQueued)), ":at": encodeTime(at),
			":oldest": str(tablekeys.OpenSort(at.Add(-turns.ClaimWindow))),
			":zero":   num(0), ":one": num(1), ":tok": str(token), ":now": num(nowMs),
			":until": num(at.Add(turns.LeaseDuration).UnixMilli()),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := isConditionFailed(err); ok {
		cur, cerr := d.currentRun(ctx, runID, ccf.Item)
		if cerr != nil {
			return nil, cerr
		}
		if cur.Lease.Token == token {
			// Our own claim, applied before its response was lost.
			return cur, nil
		}
		return cur, fmt.Errorf("claim %s (status %s, attempt %d): %w", runID, cur.Status, cur.Attempts, turns.ErrNotClaimable)
	}
	if err != nil {
		return nil, fmt.Errorf("claim run %s: %w", runID, err)
	}
	return decodeRun(runID, out.Attributes)
}

// currentRun is the run as a refused write found it: the item the server
// returned, or else read.
func (d *Dynamo) currentRun(ctx context.Context, runID string, item map[string]types.AttributeValue) (*runs.Run, error) {
	if len(item) == 0 {
		return d.GetRun(ctx, runID)
	}
	return decodeRun(runID, item)
}

// heldBy is the condition of every write of a worker holding the run
// but its final write: still running, still under its attempt, no stop
// asked for. A write refused by it says why (refusal).
const heldBy = "#s = :running AND #att = :att AND attribute_not_exists(#cancel)"

// heldNames and heldValues are heldBy's names and values, added to a
// write's own.
func heldNames(names map[string]string) map[string]string {
	names["#s"], names["#att"], names["#cancel"] = "status", attrAttempt, attrCancel
	return names
}

func heldValues(attempt int, values map[string]types.AttributeValue) map[string]types.AttributeValue {
	values[":running"], values[":att"] = str(string(runs.StatusRunning)), num(int64(attempt))
	return values
}

// refusal is why a worker's write was refused, from the run as it stood:
// final, taken over by a later attempt, or asked to stop.
func refusal(runID string, attempt int, cur *runs.Run, what string) error {
	switch {
	case cur.Status.Final():
		return fmt.Errorf("%s %s: %w", what, runID, turns.ErrAlreadyFinal)
	case cur.Attempts == attempt && cur.CancelRequestedAt != nil:
		return fmt.Errorf("%s %s: %w", what, runID, turns.ErrCancelled)
	}
	return fmt.Errorf("%s %s (attempt %d, run at %d): %w", what, runID, attempt, cur.Attempts, turns.ErrLeaseLost)
}

// RequestCancel asks a running run to stop: it marks the run, whose
// worker's next write is refused for it (or whose next look finds it).
// Only while the run is running and its answer is not on its way to the
// pod (the run has no finalMessage yet, which its worker records before
// posting): otherwise, and for a queued or final run, it returns the run
// as it stands with ErrNotCancellable, for the caller to say why. Asking
// twice is asking once.
func (d *Dynamo) RequestCancel(ctx context.Context, runID string, at time.Time) (*runs.Run, error) {
	out, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.tables.Runs),
		Key:                      runKey(runID),
		UpdateExpression:         aws.String("SET #cancel = if_not_exists(#cancel, :at)"),
		ConditionExpression:      aws.String("#s = :running AND attribute_not_exists(#fm)"),
		ExpressionAttributeNames: map[string]string{"#cancel": attrCancel, "#s": "status", "#fm": "finalMessage"},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":at": encodeTime(at), ":running": str(string(runs.StatusRunning)),
		},
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := isConditionFailed(err); ok {
		cur, cerr := d.currentRun(ctx, runID, ccf.Item)
		if cerr != nil {
			return nil, cerr
		}
		return cur, fmt.Errorf("cancel %s (status %s): %w", runID, cur.Status, turns.ErrNotCancellable)
	}
	if err != nil {
		return nil, fmt.Errorf("cancel run %s: %w", runID, err)
	}
	return decodeRun(runID, out.Attributes)
}

// refused decodes the item a single-item write was refused by into its
// refusal.
func (d *Dynamo) refused(ctx context.Context, runID string, attempt int, item map[string]types.AttributeValue, what string) error {
	cur, err := d.currentRun(ctx, runID, item)
	if err != nil {
		return err
	}
	return refusal(runID, attempt, cur, what)
}

// leaseUpdate is the SET clause that renews a lease, with its values.
func leaseUpdate(l runs.Lease, attempt int, names map[string]string, values map[string]types.AttributeValue) string {
	names["#until"], names["#worked"], names["#by"] = attrLeaseUntil, attrWorkedMs, attrWrittenBy
	values[":until"], values[":worked"], values[":by"] = num(l.UntilMs), num(l.WorkedMs), num(int64(attempt))
	return "#until = :until, #worked = :worked, #by = :by"
}

// RenewLease renews a running run's lease alone (the worker's heartbeat
// through a silence), only while attempt holds it.
func (d *Dynamo) RenewLease(ctx context.Context, runID string, attempt int, l runs.Lease) error {
	names, values := heldNames(map[string]string{}), heldValues(attempt, map[string]types.AttributeValue{})
	set := leaseUpdate(l, attempt, names, values)
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(d.tables.Runs),
		Key:                                 runKey(runID),
		UpdateExpression:                    aws.String("SET " + set),
		ConditionExpression:                 aws.String(heldBy),
		ExpressionAttributeNames:            names,
		ExpressionAttributeValues:           values,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	if ccf, ok := isConditionFailed(err); ok {
		return d.refused(ctx, runID, attempt, ccf.Item, "renew the lease of")
	}
	if err != nil {
		return fmt.Errorf("renew the lease of run %s: %w", runID, err)
	}
	return nil
}

// MarkRedispatched records that the reaper re-dispatches the run now,
// only if its lease is still the lapsed one it read (untilMs) and no
// re-dispatch was made within turns.RedispatchHold: two sweeps never
// both re-dispatch it. False when another writer got there first.
func (d *Dynamo) MarkRedispatched(ctx context.Context, runID string, untilMs int64, now time.Time) (bool, error) {
	_, err := d.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(d.tables.Runs),
		Key:                      runKey(runID),
		UpdateExpression:         aws.String("SET #r = :now"),
		ConditionExpression:      aws.String("#s = :running AND #until = :until AND (attribute_not_exists(#r) OR #r < :held)"),
		ExpressionAttributeNames: map[string]string{"#r": attrRedispatched, "#s": "status", "#until": attrLeaseUntil},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":now": num(now.UnixMilli()), ":running": str(string(runs.StatusRunning)), ":until": num(untilMs),
			":held": num(now.Add(-turns.RedispatchHold).UnixMilli()),
		},
	})
	if _, ok := isConditionFailed(err); ok {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("mark run %s re-dispatched: %w", runID, err)
	}
	return true, nil
}

// leaseAttrs writes a run's lease into its item (marshalRun).
func leaseAttrs(r *runs.Run, item map[string]types.AttributeValue) {
	l := r.Lease
	set := func(name string, v int64) {
		if v != 0 {
			item[name] = num(v)
		}
	}
	set(attrLeaseUntil, l.UntilMs)
	set(attrStartedMs, l.StartedMs)
	set(attrWorkedMs, l.WorkedMs)
	set(attrWrittenBy, int64(l.WrittenBy))
	if l.Token != "" {
		item[attrLeaseToken] = str(l.Token)
	}
}

// decodeLease reads a run's lease back from its item (decodeRun).
func decodeLease(item map[string]types.AttributeValue) runs.Lease {
	return runs.Lease{
		Token:       strAttr(item, attrLeaseToken),
		UntilMs:     numAttr(item, attrLeaseUntil),
		StartedMs:   numAttr(item, attrStartedMs),
		WorkedMs:    numAttr(item, attrWorkedMs),
		WrittenBy:   int(numAttr(item, attrWrittenBy)),
		PrevUntilMs: numAttr(item, attrPrevUntil),
	}
}
