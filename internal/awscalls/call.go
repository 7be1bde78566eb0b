// Package awscalls records the AWS calls the runtime's code makes, so a
// test can check each one against the IAM role the function runs with
// (infra/cdk/stack's TestRolesAllowRecordedCalls) and a benchmark can count
// them.
//
// A call is recorded in one of two places, as the same Call:
//
//   - on the client, by Recorder.APIOption, an SDK v2 middleware at the
//     Initialize step (once per call the code makes; the SDK's retries of
//     it are not recorded again). The handler tests and the benchmarks,
//     which build the function's clients in process, use it.
//   - on the stand-in that serves it (dynamodblocal, eventbridgelocal,
//     lambdalocal, secretsmanagerlocal), by Handler or the stand-in's own
//     ServeHTTP (once per request that reaches it, so an SDK retry is a
//     second record). The RIE tests use it: there the function's code runs
//     as the production bootstrap in a process of its own, which links no
//     test code and has no hook to add one (a recording switch in the
//     bootstrap would be production code that only tests use), while every
//     call it makes reaches a stand-in.
//
// Both read the same fields of the request (the SDK's typed input, or its
// JSON on the wire), so the two records of one call are equal.
package awscalls

import (
	"cmp"
	"encoding/json"
	"slices"
	"strings"

	"github.com/commonly/runtime/shared/tablekeys"
)

// Call is one AWS API call: what IAM authorizes it on.
type Call struct {
	// Service is the IAM service prefix: dynamodb, lambda,
	// secretsmanager, events.
	Service string `json:"service"`
	// Operation is the API operation, e.g. BatchGetItem.
	Operation string `json:"operation"`
	// Table and Index are the DynamoDB table (TableName) and index
	// (IndexName) a single-table call names.
	Table string `json:"table,omitempty"`
	Index string `json:"index,omitempty"`
	// Key is the leading-key prefix of the item a single-item call
	// (GetItem, PutItem, UpdateItem, DeleteItem) names, or of the
	// partition a Query's key condition names when it is the table's
	// partition key (not an index's): see KeyPrefix.
	Key string `json:"key,omitempty"`
	// Items are the tables a multi-table call (TransactWriteItems,
	// TransactGetItems, BatchGetItem, BatchWriteItem) names, one per
	// table, kind of item and key prefix, sorted.
	Items []Item `json:"items,omitempty"`
	// Resource is what a non-DynamoDB call names: the function (name or
	// ARN, as given) of a Lambda Invoke, the SecretId of a GetSecretValue,
	// the event bus of a PutEvents ("default" for an entry naming none;
	// several buses joined with ",", sorted).
	Resource string `json:"resource,omitempty"`
}

// Item is one part of a multi-table DynamoDB call.
type Item struct {
	Table string `json:"table"`
	// Kind is the item's kind: Put, Update, Delete, ConditionCheck or Get
	// in a transaction; Get in BatchGetItem; Put or Delete in
	// BatchWriteItem.
	Kind string `json:"kind"`
	// Key is the item's leading-key prefix (KeyPrefix).
	Key string `json:"key,omitempty"`
}

// KeyPrefix is how a partition key is recorded: the value of the state
// table's partition key attribute (tablekeys.PK) up to and including its
// first "#" ("USER#" of "USER#u1"), the part IAM's dynamodb:LeadingKeys
// conditions name; the whole value when it has no "#"; "" for an item
// without that attribute (the runs table's, keyed by runId). Ids are left
// out so that a recording is the same from run to run.
func KeyPrefix(pk string) string {
	if i := strings.IndexByte(pk, '#'); i >= 0 {
		return pk[:i+1]
	}
	return pk
}

// partitionKey is the attribute KeyPrefix reads.
const partitionKey = tablekeys.PK

// String is the call on one line, for messages.
func (c Call) String() string {
	b, _ := json.Marshal(c)
	return string(b)
}

// normalize sorts and deduplicates the items.
func (c Call) normalize() Call {
	slices.SortFunc(c.Items, compareItems)
	c.Items = slices.Compact(c.Items)
	return c
}

func compareItems(a, b Item) int {
	return cmp.Or(cmp.Compare(a.Table, b.Table), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Key, b.Key))
}

// Compare orders calls by service, operation, table, index, key, items
// and resource.
func Compare(a, b Call) int {
	return cmp.Or(
		cmp.Compare(a.Service, b.Service), cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Table, b.Table), cmp.Compare(a.Index, b.Index), cmp.Compare(a.Key, b.Key),
		slices.CompareFunc(a.Items, b.Items, compareItems), cmp.Compare(a.Resource, b.Resource))
}

// Distinct is calls sorted (Compare) without repeats: what a recording
// file holds.
func Distinct(calls []Call) []Call {
	out := slices.Clone(calls)
	slices.SortFunc(out, Compare)
	return slices.CompactFunc(out, func(a, b Call) bool { return Compare(a, b) == 0 })
}

// Count is the number of calls by operation.
func Count(calls []Call) map[string]int {
	out := map[string]int{}
	for _, c := range calls {
		out[c.Operation]++
	}
	return out
}

// iamPrefix maps the SDK's service ids to IAM's service prefixes.
var iamPrefix = map[string]string{
	"DynamoDB":        "dynamodb",
	"Lambda":          "lambda",
	"Secrets Manager": "secretsmanager",
	"EventBridge":     "events",
}

// ServicePrefix is the IAM prefix of an SDK service id ("Secrets Manager"
// → "secretsmanager"); an unknown id is lowercased without spaces.
func ServicePrefix(serviceID string) string {
	if p, ok := iamPrefix[serviceID]; ok {
		return p
	}
	return strings.ToLower(strings.ReplaceAll(serviceID, " ", ""))
}

// busName is an entry's bus as recorded.
func busName(name string) string {
	if name == "" {
		return "default"
	}
	return name
}

// buses joins the distinct buses of a PutEvents, sorted.
func buses(names []string) string {
	for i, n := range names {
		names[i] = busName(n)
	}
	slices.Sort(names)
	return strings.Join(slices.Compact(names), ",")
}
