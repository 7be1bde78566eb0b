package stack

import (
	"testing"

	"github.com/commonly/runtime/shared/tablekeys"
)

// TestLeadingKeysConfineWrites evaluates each role's statements
// (evalCondition) for item actions on the state table: the writes its
// code makes are allowed on the partitions it owns, and a write of
// another partition, or an action it never makes, is denied. A sort key
// cannot be conditioned in IAM, so a role that owns users' partitions
// (USER#) can write any item of them: days and ledgers. A plan is in a
// partition of its own (PLAN#) so that the alarm's role, which writes
// users' days and ledgers, cannot write one; only the turn's puts (the
// service's set-plan route) and checks (the admission) a plan.
func TestLeadingKeysConfineWrites(t *testing.T) {
	x := synth(t, devSettings())
	state := getAtt(x.id(x.Data.State), "Arn")
	const day = "2026-12-04"
	var (
		install = tablekeys.Install("inst-1").PK
		plan    = tablekeys.Plan("u1").PK
		usage   = tablekeys.UsageOnDay("u1", day).PK
		ledger  = tablekeys.Ledger("u1", day).PK
		idem    = tablekeys.Idempotency("u1", "inst-1", "key").PK
		sbx     = tablekeys.Sandbox("sbx-1").PK
		slot    = tablekeys.SandboxSlotPartition(3)
		other   = "OTHER#1" // a partition no kind of item has
	)
	turn, alarm, reaper := x.Turn.function, x.Alarm.function, x.Reaper.function
	for _, c := range []struct {
		name   string
		fn     *function
		action string
		pk     string
		want   bool
	}{
		{"turn puts an install", turn, "PutItem", install, true},
		{"turn puts a plan", turn, "PutItem", plan, true},
		{"turn cannot update a plan", turn, "UpdateItem", plan, false},
		{"turn cannot put in a user's partition", turn, "PutItem", ledger, false},
		{"turn cannot check a user's day", turn, "ConditionCheckItem", usage, false},
		{"turn puts an idempotency record", turn, "PutItem", idem, true},
		{"turn puts a sandbox record", turn, "PutItem", sbx, true},
		{"turn updates a user's day", turn, "UpdateItem", usage, true},
		{"turn updates an install", turn, "UpdateItem", install, true},
		{"turn updates a sandbox record", turn, "UpdateItem", sbx, true},
		{"turn checks a user's plan", turn, "ConditionCheckItem", plan, true},
		{"turn takes a sandbox slot", turn, "PutItem", slot, true},
		{"turn frees a sandbox slot", turn, "DeleteItem", slot, true},
		{"turn reads a shard's slots", turn, "Query", slot, true},
		{"turn cannot update an idempotency record", turn, "UpdateItem", idem, false},
		{"turn cannot check an install", turn, "ConditionCheckItem", install, false},
		{"turn cannot put another partition", turn, "PutItem", other, false},
		{"turn cannot update another partition", turn, "UpdateItem", other, false},
		{"turn cannot delete", turn, "DeleteItem", plan, false},

		{"alarm puts a ledger", alarm, "PutItem", ledger, true},
		{"alarm updates a user's day", alarm, "UpdateItem", usage, true},
		{"alarm cannot put an install", alarm, "PutItem", install, false},
		{"alarm cannot put an idempotency record", alarm, "PutItem", idem, false},
		{"alarm cannot update a sandbox record", alarm, "UpdateItem", sbx, false},
		{"alarm cannot update another partition", alarm, "UpdateItem", other, false},
		{"alarm cannot check a condition", alarm, "ConditionCheckItem", usage, false},
		{"alarm cannot read one item", alarm, "GetItem", ledger, false},
		{"alarm cannot delete", alarm, "DeleteItem", ledger, false},
		{"alarm cannot take a sandbox slot", alarm, "PutItem", slot, false},
		{"alarm cannot put a plan", alarm, "PutItem", plan, false},
		{"alarm cannot update a plan", alarm, "UpdateItem", plan, false},

		{"reaper updates a sandbox record", reaper, "UpdateItem", sbx, true},
		{"reaper updates a user's day (a refund)", reaper, "UpdateItem", usage, true},
		{"reaper cannot put a plan", reaper, "PutItem", plan, false},
		{"reaper cannot update a plan", reaper, "UpdateItem", plan, false},
		{"reaper cannot update an install", reaper, "UpdateItem", install, false},
		{"reaper cannot update an idempotency record", reaper, "UpdateItem", idem, false},
	} {
		n := need{action: "dynamodb:" + c.action, resource: state, keys: map[string][]string{"dynamodb:LeadingKeys": {c.pk}}}
		allowed := false
		for _, g := range grantsOf(t, x, c.fn.Role) {
			allowed = allowed || g.allows(t, n)
		}
		if allowed != c.want {
			t.Errorf("%s: %s on %s allowed %v, want %v", c.name, c.action, c.pk, allowed, c.want)
		}
	}
}
