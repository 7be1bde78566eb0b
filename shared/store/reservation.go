package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/money"
	"github.com/commonly/runtime/shared/runs"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// The spend cap holds under concurrency because money is reserved at
// admission, on the user-day item the admission already counts the turn
// on, and released by the run's final write (docs/money.md, "The spend
// cap"). The item keeps:
//
//   - reservedMicros: the reservations of the day's turns in flight;
//   - capCommittedMicros: the cost of the day's finished runs, added by
//     each run's final write (the cap does not wait for the stream-fed
//     ledger, costMicros);
//   - capHeldMicros: their sum, which the admission's condition compares
//     with the cap (held + R <= cap).
//
// Every turn's cost stays within its reservation (the loop bounds each
// call by it), so the day's cost never passes held, and held never
// passes the cap.

// maxReserveAttempts bounds the admissions of one turn whose reservation
// was overtaken by another turn's (each retry is sized from the item the
// refused transaction returned); each lost race means another turn of
// the same user reserved or settled, so this is reached only under a
// storm of one user's turns, refused then with 503 rather than admitted
// unchecked.
const maxReserveAttempts = 8

// admitReserving admits a turn under the spend cap: it reserves
// R = min(a.Reserve, cap - held) in the admission's transaction, first
// trying the whole bound (one transaction when the day has room for it),
// then, when another reservation overtook it, what the item it was
// refused on leaves. Below a.MinReserve the turn is refused at the cap.
// An idempotent retry reserves nothing: its idempotency record cancels
// the whole transaction.
func (d *Dynamo) admitReserving(ctx context.Context, a turns.Admission) (turns.AdmitResult, error) {
	if a.Reserve <= 0 {
		return turns.AdmitResult{}, fmt.Errorf("admit: a spend cap of %s with no turn bound to reserve", a.SpendCap)
	}
	want := min(a.Reserve, a.SpendCap)
	for attempt := 1; ; attempt++ {
		var res turns.AdmitResult
		var refusal *counterRefusal
		if want >= max(a.MinReserve, 1) {
			a.Run.ReservedMicros = want
			var err error
			if res, refusal, err = d.admitOnce(ctx, a); err != nil || refusal == nil {
				if !res.Admitted {
					a.Run.ReservedMicros = 0
				}
				return res, err
			}
		}
		// Refused by the counter's condition (or nothing worth trying):
		// which bound, from the item as the refusal saw it.
		a.Run.ReservedMicros = 0
		usage, err := d.usageOf(ctx, a, refusal)
		if err != nil {
			return turns.AdmitResult{}, err
		}
		spent := max(money.Micros(numAttr(usage, attrCost)), money.Micros(numAttr(usage, attrCapCommitted)))
		reserved := money.Micros(numAttr(usage, attrReserved))
		left := a.SpendCap - money.Micros(numAttr(usage, attrCapHeld))
		next := min(a.Reserve, left)
		switch {
		case money.Micros(numAttr(usage, attrCost)) >= a.SpendCap || next < max(a.MinReserve, 1):
			// The cap wins when the ceiling is met too.
			return turns.AdmitResult{CapRefused: true, CapSpent: spent, CapReserved: reserved}, nil
		case refusal != nil && numAttr(usage, attrTurns) >= a.Limit:
			return refusedAtCeiling(a, usage), nil
		case attempt == maxReserveAttempts:
			return turns.AdmitResult{}, fmt.Errorf("admit turn: the reservations of %s kept changing: %w", a.Run.UserID, turns.ErrUnavailable)
		}
		want = next
	}
}

// settleUpdate is the final write's change to the user-day item of a run
// with a reservation: the reservation released, the charge committed,
// held moved by their difference; and the turn given back on a refund.
// The charge is the run's cost, or CapChargedMicros when its closer set
// it higher (an abandoned run: see turns.endAbandoned); it is recorded
// on the run.
func (d *Dynamo) settleUpdate(r *runs.Run, refund bool) *types.Update {
	charge := max(r.CostMicros, r.CapChargedMicros)
	r.CapChargedMicros = charge
	update := "ADD #r :release, #c :charge, #h :delta"
	names := map[string]string{"#r": attrReserved, "#c": attrCapCommitted, "#h": attrCapHeld}
	values := map[string]types.AttributeValue{
		":release": num(-int64(r.ReservedMicros)), ":charge": num(int64(charge)), ":delta": num(int64(charge - r.ReservedMicros)),
	}
	if refund {
		update += ", #t :minus"
		names["#t"], values[":minus"] = attrTurns, num(-1)
	}
	return &types.Update{
		TableName:                 aws.String(d.tables.State),
		Key:                       stateKey(tablekeys.UsageOnDay(r.UserID, r.Day)),
		UpdateExpression:          aws.String(update),
		ExpressionAttributeNames:  names,
		ExpressionAttributeValues: values,
	}
}
