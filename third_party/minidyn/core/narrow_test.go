package core

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/truora/minidyn/types"
)

// narrowTable has hash keys that share prefixes ("a", "a.b", "ab") and a
// global index by type, to check that a Query searching one partition
// answers exactly what searching every key did.
func narrowTable(t *testing.T) *Table {
	t.Helper()
	c := require.New(t)
	table := NewTable("narrow")
	table.AttributesDef = map[string]string{"id": "S", "name": "S", "kind": "S"}
	table.KeySchema = keySchema{"id", "name", false}
	idx, all := "byKind", "ALL"
	c.NoError(table.AddGlobalIndexes([]*types.GlobalSecondaryIndex{{
		IndexName:             &idx,
		KeySchema:             []*types.KeySchemaElement{{AttributeName: "kind", KeyType: "HASH"}, {AttributeName: "name", KeyType: "RANGE"}},
		Projection:            &types.Projection{ProjectionType: &all},
		ProvisionedThroughput: &types.ProvisionedThroughput{ReadCapacityUnits: 1, WriteCapacityUnits: 1},
	}}))
	for _, it := range [][3]string{
		{"a", "n1", "x"}, {"a", "n3", "y"}, {"a", "n2", "x"},
		{"a.b", "n1", "x"}, {"a.b", "n0", "x.y"},
		{"ab", "n1", "xy"}, {"b", "n9", "x"},
	} {
		_, err := table.Put(&types.PutItemInput{TableName: &table.Name, Item: map[string]*types.Item{
			"id": {S: new(it[0])}, "name": {S: new(it[1])}, "kind": {S: new(it[2])},
		}})
		c.NoError(err)
	}

	return table
}

func names(items []map[string]*types.Item) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, *it["id"].S+"/"+*it["name"].S)
	}

	return out
}

func TestQuerySearchesOnePartition(t *testing.T) {
	cases := []struct {
		name    string
		index   string
		expr    string
		value   string
		forward bool
		want    []string
	}{
		{"table", "", "#h = :v", "a", true, []string{"a/n1", "a/n2", "a/n3"}},
		{"table backward", "", "#h = :v", "a", false, []string{"a/n3", "a/n2", "a/n1"}},
		{"table, the value first", "", ":v = #h", "a", true, []string{"a/n1", "a/n2", "a/n3"}},
		{"table, a hash holding a dot", "", "#h = :v", "a.b", true, []string{"a.b/n0", "a.b/n1"}},
		{"table, with a range condition", "", "#h = :v AND #r >= :r", "a", true, []string{"a/n2", "a/n3"}},
		{"table, no such partition", "", "#h = :v", "c", true, []string{}},
		// Equal index keys in the order of their primary keys ("a.b.n1" < "a.n1").
		{"index", "byKind", "#k = :v", "x", true, []string{"a.b/n1", "a/n1", "a/n2", "b/n9"}},
		{"index backward", "byKind", "#k = :v", "x", false, []string{"b/n9", "a/n2", "a/n1", "a.b/n1"}},
		{"index, a hash holding a dot", "byKind", "#k = :v", "x.y", true, []string{"a.b/n0"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := require.New(t)
			table := narrowTable(t)
			in := QueryInput{
				Index:                     tc.index,
				KeyConditionExpression:    tc.expr,
				Aliases:                   map[string]string{"#h": "id", "#r": "name", "#k": "kind"},
				ExpressionAttributeValues: map[string]*types.Item{":v": {S: new(tc.value)}, ":r": {S: new("n2")}},
				ScanIndexForward:          tc.forward,
			}
			items, last, err := table.SearchData(in)
			c.NoError(err)
			c.Equal(tc.want, names(items))
			c.Empty(last)

			// One page at a time, the same items in the same order.
			var paged []string
			in.Limit = 1
			for range 10 {
				page, last, err := table.SearchData(in)
				c.NoError(err)
				paged = append(paged, names(page)...)
				if len(last) == 0 {
					break
				}
				in.ExclusiveStartKey = last
			}
			c.Equal(tc.want, append([]string{}, paged...))
		})
	}
}

// The search's keys are the partition's (a prefix test on each), not
// every key of the table or index: with "a.b" sharing the prefix "a."
// (its items are then left by the key condition, above).
func TestQueryNarrowsItsKeys(t *testing.T) {
	c := require.New(t)
	table := narrowTable(t)
	in := QueryInput{
		KeyConditionExpression:    "id = :v",
		ExpressionAttributeValues: map[string]*types.Item{":v": {S: new("a")}},
		ScanIndexForward:          true,
	}
	_, keys := table.fetchQueryData(in)
	c.Equal([]string{"a.b.n0", "a.b.n1", "a.n1", "a.n2", "a.n3"}, keys)

	in.Index, in.KeyConditionExpression = "byKind", "kind = :v"
	in.ExpressionAttributeValues[":v"] = &types.Item{S: new("x")}
	_, keys = table.fetchQueryData(in)
	c.Equal([]string{"x.n1", "x.n1", "x.n2", "x.n9", "x.y.n0"}, keys)

	// A Scan, or a condition it cannot read, searches every key.
	in.Scan = true
	_, keys = table.fetchQueryData(in)
	c.Len(keys, 7)
	in.Scan, in.KeyConditionExpression = false, "begins_with(kind, :v)"
	_, keys = table.fetchQueryData(in)
	c.Len(keys, 7)
}
