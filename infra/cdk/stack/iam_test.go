package stack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
)

// statement is a policy statement in a comparable form.
type statement struct {
	Actions   string // sorted, comma-joined
	Resources string // JSON of the sorted resources
	Condition string // JSON, "" when there is none
}

func statementsOf(t *testing.T, x *synthesized, role awsiam.Role) []statement {
	t.Helper()
	roleRef := ref(x.id(role))
	var out []statement
	for _, p := range x.ofType("AWS::IAM::Policy") {
		props := p["Properties"].(map[string]any)
		attached := false
		for _, r := range props["Roles"].([]any) {
			attached = attached || equalJSON(r, roleRef)
		}
		if !attached {
			continue
		}
		for _, raw := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := raw.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Errorf("a %s statement: %v", st["Effect"], st)
			}
			cond := ""
			if c, ok := st["Condition"]; ok {
				raw, _ := json.Marshal(c)
				cond = string(raw)
			}
			out = append(out, statement{Actions: joinSorted(st["Action"]), Resources: jsonSorted(st["Resource"]), Condition: cond})
		}
	}
	slices.SortFunc(out, func(a, b statement) int { return strings.Compare(a.Actions+a.Resources, b.Actions+b.Resources) })
	return out
}

func joinSorted(v any) string {
	var list []string
	switch x := v.(type) {
	case string:
		list = []string{x}
	case []any:
		for _, e := range x {
			list = append(list, e.(string))
		}
	}
	slices.Sort(list)
	return strings.Join(list, ",")
}

func jsonSorted(v any) string {
	list, ok := v.([]any)
	if !ok {
		list = []any{v}
	}
	parts := make([]string, len(list))
	for i, e := range list {
		raw, _ := json.Marshal(e)
		parts[i] = string(raw)
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}

func equalJSON(a, b any) bool {
	ra, _ := json.Marshal(a)
	rb, _ := json.Marshal(b)
	return string(ra) == string(rb)
}

func join(parts ...any) map[string]any { return map[string]any{"Fn::Join": []any{"", parts}} }

// TestLeastPrivilege lists every grant of each function's role: its own
// log group, its own tables' actions, its secrets, its queue, its bus,
// invoking itself, sending spans to X-Ray; no managed policy and no
// wildcard but ListStreams and X-Ray's PutTraceSegments.
func TestLeastPrivilege(t *testing.T) {
	x := synth(t, devSettings())
	st := func(actions string, resources ...any) statement {
		return statement{Actions: joinSorted(toAny(strings.Split(actions, ","))), Resources: jsonSorted(resources)}
	}
	state, runs := getAtt(x.id(x.Data.State), "Arn"), getAtt(x.id(x.Data.Runs), "Arn")
	logs := func(f *function) statement {
		return st("logs:CreateLogStream,logs:PutLogEvents", getAtt(x.id(f.LogGroup), "Arn"))
	}
	secret := func(names ...string) statement {
		var refs []any
		for _, n := range names {
			refs = append(refs, ref(x.id(x.Secrets.byName[n])))
		}
		return st("secretsmanager:GetSecretValue", refs...)
	}
	sqs := "sqs:GetQueueAttributes,sqs:GetQueueUrl,sqs:SendMessage"
	// Spans to X-Ray's OTLP endpoint (tracing.go): the one action it
	// authorizes, which takes no resource but *.
	xray := st("xray:PutTraceSegments", "*")
	want := map[string][]statement{
		TurnFunctionID: {
			logs(x.Turn.function),
			secret("E2B_API_KEY", "LLM_API_KEY"),
			st(sqs, getAtt(x.id(x.Turn.DispatchFailures), "Arn")),
			// Reads of the state table; each write on the partitions it makes.
			st("dynamodb:BatchGetItem,dynamodb:GetItem", state),
			withCondition(st("dynamodb:PutItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["INSTALL#*","PLAN#*","IDEM#*","SANDBOX#*","SANDBOXCAP#*","JOURNAL#*"]}}`),
			withCondition(st("dynamodb:UpdateItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["INSTALL#*","USER#*","SANDBOX#*"]}}`),
			withCondition(st("dynamodb:ConditionCheckItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["PLAN#*"]}}`),
			// The sandbox cap's slots freed; their shard and a run's journal read.
			withCondition(st("dynamodb:DeleteItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["SANDBOXCAP#*"]}}`),
			withCondition(st("dynamodb:Query", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["SANDBOXCAP#*","JOURNAL#*"]}}`),
			// Runs read, written and batch-read (a page's open runs); two
			// indexes (one statement: minimizePolicies merges the grants):
			// a user's runs, a taken-over run's sandboxes.
			st("dynamodb:BatchGetItem,dynamodb:GetItem,dynamodb:PutItem,dynamodb:UpdateItem", runs),
			st("dynamodb:Query", join(runs, "/index/userRuns"), join(state, "/index/runSandboxes")),
			st("lambda:InvokeFunction", getAtt(x.id(x.Turn.Function), "Arn")),
			xray,
		},
		AlarmFunctionID: {
			logs(x.Alarm.function),
			st(sqs, getAtt(x.id(x.Alarm.StreamFailures), "Arn")),
			st("dynamodb:ListStreams", "*"),
			st("dynamodb:DescribeStream,dynamodb:GetRecords,dynamodb:GetShardIterator", getAtt(x.id(x.Data.Runs), "StreamArn")),
			// ReadDays' BatchGetItem; the ledger's writes on users' partitions only (no plan's).
			st("dynamodb:BatchGetItem", state),
			withCondition(st("dynamodb:PutItem,dynamodb:UpdateItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["USER#*"]}}`),
			st("events:PutEvents", getAtt(x.id(x.Events.Bus), "Arn")),
			xray,
		},
		// Queries of its three indexes only; item writes on sandbox
		// records and users' days (the refund) only; a run read and
		// written whole.
		ReaperFunctionID: {
			logs(x.Reaper.function),
			secret("E2B_API_KEY"),
			// One statement: minimizePolicies (cdk.json) merges the grants.
			st("dynamodb:Query", join(runs, "/index/open"), join(state, "/index/live"), join(state, "/index/runSandboxes")),
			withCondition(st("dynamodb:UpdateItem", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["SANDBOX#*","USER#*"]}}`),
			st("dynamodb:GetItem,dynamodb:PutItem,dynamodb:UpdateItem", runs),
			// A stopped worker's run dispatched again: the turn function alone.
			st("lambda:InvokeFunction", getAtt(x.id(x.Turn.Function), "Arn")),
			xray,
		},
		// A run read, and each user's stream slots (and its spans).
		EventsFunctionID: {
			logs(x.RunEvents.function),
			st("dynamodb:GetItem", runs),
			withCondition(st("dynamodb:DeleteItem,dynamodb:PutItem,dynamodb:Query", state), `{"ForAllValues:StringLike":{"dynamodb:LeadingKeys":["STREAMS#*"]}}`),
			xray,
		},
	}
	for _, c := range fnCases {
		f := c.fn(x)
		w := want[c.id]
		slices.SortFunc(w, func(a, b statement) int { return strings.Compare(a.Actions+a.Resources, b.Actions+b.Resources) })
		equal(t, c.id+" grants", statementsOf(t, x, f.Role), w)
		role := x.props(t, x.id(f.Role))
		if _, ok := role["ManagedPolicyArns"]; ok {
			t.Errorf("%s's role has managed policies: %v", c.id, role["ManagedPolicyArns"])
		}
		if _, ok := role["Policies"]; ok {
			t.Errorf("%s's role has inline policies outside the listed ones", c.id)
		}
		equal(t, c.id+" trust", role["AssumeRolePolicyDocument"].(map[string]any)["Statement"], []any{map[string]any{
			"Action": "sts:AssumeRole", "Effect": "Allow", "Principal": map[string]any{"Service": "lambda.amazonaws.com"},
		}})
	}
	if n := len(x.ofType("AWS::IAM::Role")); n != len(fnCases) {
		t.Errorf("%d roles, want one per function", n)
	}
}

func withCondition(s statement, cond string) statement {
	s.Condition = cond
	return s
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}
