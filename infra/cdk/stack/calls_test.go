package stack

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"

	"github.com/commonly/runtime/internal/awscalls"
)

// grantStatement is an Allow statement of a role's policies, as the
// template has it.
type grantStatement struct {
	Actions   []string
	Resources []any // strings and intrinsics (Ref, Fn::GetAtt, Fn::Join)
	Condition map[string]any
}

func grantsOf(t *testing.T, x *synthesized, role awsiam.Role) []grantStatement {
	t.Helper()
	roleRef := ref(x.id(role))
	var out []grantStatement
	for _, p := range x.ofType("AWS::IAM::Policy") {
		props := p["Properties"].(map[string]any)
		if !slices.ContainsFunc(props["Roles"].([]any), func(r any) bool { return equalJSON(r, roleRef) }) {
			continue
		}
		for _, raw := range props["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			st := raw.(map[string]any)
			if st["Effect"] != "Allow" {
				t.Fatalf("a %s statement: the check below knows Allow only", st["Effect"])
			}
			actions, err := stringsOf(st["Action"])
			if err != nil {
				t.Fatal(err)
			}
			resources, ok := st["Resource"].([]any)
			if !ok {
				resources = []any{st["Resource"]}
			}
			cond, _ := st["Condition"].(map[string]any)
			out = append(out, grantStatement{Actions: actions, Resources: resources, Condition: cond})
		}
	}
	return out
}

// need is one authorization IAM makes for a call: an action on a
// resource, with the request's condition keys. A transaction or a batch
// needs one a part (TransactWriteItems is authorized per item, as
// PutItem, UpdateItem, DeleteItem or ConditionCheckItem on its table).
type need struct {
	action   string
	resource any
	keys     map[string][]string
	call     awscalls.Call
}

func (n need) String() string {
	r, _ := json.Marshal(n.resource)
	return fmt.Sprintf("%s on %s %v (from %v)", n.action, r, n.keys, n.call)
}

// allows is whether the statement allows the need.
func (s grantStatement) allows(t *testing.T, n need) bool {
	t.Helper()
	if !slices.ContainsFunc(s.Actions, func(a string) bool { return globMatch(a, n.action) }) {
		return false
	}
	if !slices.ContainsFunc(s.Resources, func(r any) bool { return r == "*" || equalJSON(r, n.resource) }) {
		return false
	}
	ok, err := evalCondition(s.Condition, n.keys)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// resolver names a recording's "$VAR" as the template does: the value
// the function's environment gives VAR, as the resource IAM authorizes
// (a table's or a bus's ARN, a secret's ARN); AWS_LAMBDA_FUNCTION_NAME,
// which Lambda sets, is the function itself.
type resolver struct {
	t   *testing.T
	x   *synthesized
	fn  *function
	env map[string]any
}

func (r resolver) arn(name string) any {
	r.t.Helper()
	v, ok := strings.CutPrefix(name, "$")
	if !ok {
		r.t.Fatalf("%q is not named by a variable: record it with awscalls.Symbolic", name)
	}
	if v == "AWS_LAMBDA_FUNCTION_NAME" {
		return getAtt(r.x.id(r.fn.Function), "Arn")
	}
	val, ok := r.env[v]
	if !ok {
		r.t.Fatalf("the function's environment has no %s", v)
	}
	m, ok := val.(map[string]any)
	if !ok {
		return val // a literal, as an imported secret's ARN
	}
	logical, ok := m["Ref"].(string)
	if !ok {
		r.t.Fatalf("%s is %v, not a Ref", v, val)
	}
	switch typ := r.x.resource(r.t, logical)["Type"]; typ {
	case "AWS::DynamoDB::Table", "AWS::Events::EventBus":
		return getAtt(logical, "Arn") // Ref is the name
	case "AWS::SecretsManager::Secret":
		return val // Ref is the ARN
	case "AWS::Lambda::Function":
		return getAtt(logical, "Arn") // Ref is the name
	default:
		r.t.Fatalf("%s names a %v, which the check does not know", v, typ)
		return nil
	}
}

// leadingKeys is a part's dynamodb:LeadingKeys: one partition key with
// the recorded prefix. A part recorded without one (the runs table's,
// keyed by runId; a Query of an index) carries a value no pattern of the stack
// names, so a LeadingKeys condition on it fails until it is recorded.
func leadingKeys(prefix string) map[string][]string {
	if prefix == "" {
		return map[string][]string{"dynamodb:LeadingKeys": {"(not recorded)"}}
	}
	return map[string][]string{"dynamodb:LeadingKeys": {prefix + "id"}}
}

// transactAction is the action each kind of transaction item needs.
var transactAction = map[string]string{"Put": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem", "ConditionCheck": "ConditionCheckItem", "Get": "GetItem"}

func (r resolver) needs(c awscalls.Call) []need {
	r.t.Helper()
	one := func(action string, resource any, keys map[string][]string) need {
		return need{action: action, resource: resource, keys: keys, call: c}
	}
	switch c.Service + ":" + c.Operation {
	case "dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem":
		return []need{one("dynamodb:"+c.Operation, r.arn(c.Table), leadingKeys(c.Key))}
	case "dynamodb:Query", "dynamodb:Scan":
		res := r.arn(c.Table)
		if c.Index != "" {
			res = join(res, "/index/"+c.Index)
		}
		keys := leadingKeys(c.Key)
		if c.Operation == "Scan" {
			keys = nil
		}
		return []need{one("dynamodb:"+c.Operation, res, keys)}
	case "dynamodb:BatchGetItem", "dynamodb:BatchWriteItem", "dynamodb:TransactWriteItems", "dynamodb:TransactGetItems":
		var out []need
		for _, it := range c.Items {
			action := c.Operation
			if strings.HasPrefix(action, "Transact") {
				action = transactAction[it.Kind]
			}
			out = append(out, one("dynamodb:"+action, r.arn(it.Table), leadingKeys(it.Key)))
		}
		return out
	case "lambda:Invoke":
		return []need{one("lambda:InvokeFunction", r.arn(c.Resource), nil)}
	case "secretsmanager:GetSecretValue":
		return []need{one("secretsmanager:GetSecretValue", r.arn(c.Resource), nil)}
	case "events:PutEvents":
		var out []need
		for _, bus := range strings.Split(c.Resource, ",") {
			out = append(out, one("events:PutEvents", r.arn(bus), nil))
		}
		return out
	}
	r.t.Fatalf("%v: the check does not know what IAM authorizes this call on; teach needs", c)
	return nil
}

// leadingPatterns is a statement's dynamodb:LeadingKeys patterns (none
// without that condition).
func leadingPatterns(t *testing.T, cond map[string]any) []string {
	t.Helper()
	var out []string
	for _, block := range cond {
		byKey, _ := block.(map[string]any)
		if raw, ok := byKey["dynamodb:LeadingKeys"]; ok {
			ps, err := stringsOf(raw)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ps...)
		}
	}
	return out
}

// keptGrants are the actions a role is granted that no recorded call
// makes, each with the reason it is kept: what Lambda does for the
// function, not its code.
var keptGrants = map[string]string{
	"logs:CreateLogStream":      "Lambda writes the function's logs to its log group",
	"logs:PutLogEvents":         "Lambda writes the function's logs to its log group",
	"sqs:SendMessage":           "Lambda sends a failed asynchronous invocation (turn) or stream batch (alarm) to the failure queue",
	"sqs:GetQueueAttributes":    "the failure destination's grant (CDK's SqsDestination, SqsDlq)",
	"sqs:GetQueueUrl":           "the failure destination's grant (CDK's SqsDestination, SqsDlq)",
	"dynamodb:ListStreams":      "the alarm's event source mapping finds the runs stream",
	"dynamodb:DescribeStream":   "the alarm's event source mapping reads the runs stream",
	"dynamodb:GetRecords":       "the alarm's event source mapping reads the runs stream",
	"dynamodb:GetShardIterator": "the alarm's event source mapping reads the runs stream",
	// Made by the code, but not through an SDK client: the span
	// exporter's SigV4 POST to X-Ray's OTLP endpoint (shared/tracing,
	// xray.go), which no middleware sees and no test sends to AWS's
	// endpoint (no variable a bootstrap reads overrides it).
	"xray:PutTraceSegments": "the span exporter's POST to X-Ray's OTLP endpoint, outside the SDK clients",
}

// recordedCalls reads a function's recordings (functions/<dir>/testdata/aws-calls).
func recordedCalls(t *testing.T, dir string) []awscalls.Call {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "functions", dir, "testdata", "aws-calls", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("%s: no recordings (%v)", dir, err)
	}
	var all []awscalls.Call
	for _, f := range files {
		calls, err := awscalls.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, calls...)
	}
	return awscalls.Distinct(all)
}

// TestRolesAllowRecordedCalls holds each function's role to the AWS calls
// its code makes, as the handler, app and RIE tests recorded them
// (functions/<fn>/testdata/aws-calls, kept true by those tests): every
// call is allowed by a statement of the role on the resource it names
// (its table or index, the function, the secret, the bus), conditions
// evaluated (evalCondition); and every action granted on each resource is
// needed by some call, or kept with its reason (keptGrants), and on each
// partition prefix it is granted on (dynamodb:LeadingKeys), by some call
// on that prefix. IAM, which
// the embedded DynamoDB and the stand-ins do not check, is checked here
// against the synthesized template of both stages.
func TestRolesAllowRecordedCalls(t *testing.T) {
	calls := map[string][]awscalls.Call{}
	for _, c := range fnCases {
		calls[c.id] = recordedCalls(t, c.dir)
	}
	granted := map[string]bool{}
	for _, s := range []Settings{devSettings(), prodSettings()} {
		x := synth(t, s)
		for _, c := range fnCases {
			fn := c.fn(x)
			r := resolver{t: t, x: x, fn: fn, env: x.props(t, x.id(fn.Function))["Environment"].(map[string]any)["Variables"].(map[string]any)}
			grants := grantsOf(t, x, fn.Role)
			used := map[string]bool{} // action + resource JSON
			readsSecrets := false
			for _, call := range calls[c.id] {
				for _, n := range r.needs(call) {
					allowed := false
					for _, g := range grants {
						if g.allows(t, n) {
							allowed = true
							res, _ := json.Marshal(n.resource)
							used[n.action+" "+string(res)] = true
							for _, p := range leadingPatterns(t, g.Condition) {
								if slices.ContainsFunc(n.keys["dynamodb:LeadingKeys"], func(v string) bool { return globMatch(p, v) }) {
									used[n.action+" "+string(res)+" "+p] = true
								}
							}
						}
					}
					if !allowed {
						t.Errorf("%s %s: the role does not allow %v", s.Stage, c.id, n)
					}
					readsSecrets = readsSecrets || n.action == "secretsmanager:GetSecretValue"
				}
			}
			for _, g := range grants {
				for _, a := range g.Actions {
					granted[a] = true
					if _, ok := keptGrants[a]; ok {
						continue
					}
					for _, res := range g.Resources {
						raw, _ := json.Marshal(res)
						// secrets.Resolve reads every X_SECRET_ARN it is
						// given, in one loop: one secret read recorded
						// stands for the others a stage adds.
						if !used[a+" "+string(raw)] && (a != "secretsmanager:GetSecretValue" || !readsSecrets) {
							t.Errorf("%s %s: %s on %s is granted, but no recorded call makes it (drop the grant, or keep it in keptGrants with its reason)", s.Stage, c.id, a, raw)
							continue
						}
						// Each partition a write is granted on is written by some call.
						for _, p := range leadingPatterns(t, g.Condition) {
							if !used[a+" "+string(raw)+" "+p] {
								t.Errorf("%s %s: %s on %s is granted on partitions %s, but no recorded call makes it there (drop the pattern)", s.Stage, c.id, a, raw, p)
							}
						}
					}
				}
			}
		}
	}
	for a := range keptGrants {
		if !granted[a] {
			t.Errorf("keptGrants keeps %s, which no role is granted: drop it", a)
		}
	}
}
