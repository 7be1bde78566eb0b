package stack

import (
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/shared/tablekeys"
)

// The state table's partition-key prefixes (shared/tablekeys), as IAM's
// dynamodb:LeadingKeys patterns: each item kind's partition key starts
// with one.
var (
	installKeys = leading(tablekeys.Install("i"))               // installs
	userKeys    = leading(tablekeys.UsageOnDay("u", "d"))       // a user's days and ledgers
	planKeys    = leading(tablekeys.Plan("u"))                  // users' plans, each in a partition of its own
	idemKeys    = leading(tablekeys.Idempotency("c", "i", "k")) // idempotency records
	sandboxKeys = leading(tablekeys.Sandbox("s"))               // sandbox records
	slotKeys    = leading(tablekeys.SandboxSlot(0, 0))          // the sandbox cap's slots
	streamKeys  = leading(tablekeys.StreamSlot("u", 0))         // each user's stream cap's slots
	journalKeys = leading(tablekeys.Journal("r", 0))            // turns' journals
)

// leading is the pattern of the partition keys that start as k's does,
// up to its first "#": "USER#*".
func leading(k tablekeys.Key) string {
	prefix, _, _ := strings.Cut(k.PK, "#")
	return prefix + "#*"
}

// grantKeys grants actions on the items of a table whose partition keys
// match one of patterns only: IAM checks every key a request names
// (each item of a transaction or a batch, for its own action) against
// dynamodb:LeadingKeys. A sort key cannot be conditioned, so a pattern
// covers every item of its partitions (USER#* a user's days as well as
// ledgers); that is why a plan has a partition of its own (PLAN#*).
func grantKeys(role awsiam.IRole, t awsdynamodb.Table, actions []string, patterns ...string) {
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   dynamoActions(actions),
		Resources: jsii.Strings(*t.TableArn()),
		Conditions: &map[string]any{"ForAllValues:StringLike": map[string]any{
			"dynamodb:LeadingKeys": patterns,
		}},
	}))
}
