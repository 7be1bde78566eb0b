package load

import (
	"context"
	"math"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/commonly/runtime/internal/dynamodblocal"
)

// The write units a call consumes, as DynamoDB bills them: one per 1 KB
// of the item written (rounded up), twice inside TransactWriteItems
// (prepare and commit; a ConditionCheck counts as a 1 KB write), plus one
// write to each global secondary index the item enters, stays on or
// leaves (one per 1 KB of what the index projects). The item written is
// the PutItem's item, an UpdateItem's new image when the call returns it
// (ReturnValues ALL_NEW) and otherwise its key and the values it sets (a
// lower bound: the run's updates that do not return the item touch
// small items, under 1 KB), and one unit for a delete. Index membership
// follows each item through the writes seen (a shadow of which items are
// on which index, under which index key), since a write does not say what
// it replaced; an index is written only when what it holds changes.

// tableSchema is what the accounting needs of a table.
type tableSchema struct {
	keys    []string
	indexes []indexSchema
}

type indexSchema struct {
	name string
	keys []string
	all  bool // projects every attribute
}

// describeSchemas reads the tables' keys and indexes.
func describeSchemas(ctx context.Context, db *dynamodb.Client, tables ...string) (map[string]tableSchema, error) {
	out := map[string]tableSchema{}
	for _, t := range tables {
		d, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t)})
		if err != nil {
			return nil, err
		}
		var s tableSchema
		for _, k := range d.Table.KeySchema {
			s.keys = append(s.keys, aws.ToString(k.AttributeName))
		}
		for _, g := range d.Table.GlobalSecondaryIndexes {
			ix := indexSchema{name: aws.ToString(g.IndexName)}
			for _, k := range g.KeySchema {
				ix.keys = append(ix.keys, aws.ToString(k.AttributeName))
			}
			ix.all = g.Projection != nil && g.Projection.ProjectionType == types.ProjectionTypeAll
			s.indexes = append(s.indexes, ix)
		}
		out[t] = s
	}
	return out, nil
}

// kb is the 1 KB write units of size bytes (at least one).
func kb(size int) float64 { return math.Max(1, math.Ceil(float64(size)/1024)) }

// write is one item written, for the accounting.
type write struct {
	table   string
	key     map[string]types.AttributeValue
	size    int
	present map[string]bool // attributes known present after the write
	absent  map[string]bool // attributes known absent after the write
	image   bool            // item is the whole item after the write
	item    map[string]types.AttributeValue
	delete  bool
}

func putWrite(table string, item map[string]types.AttributeValue) write {
	w := write{table: table, key: item, item: item, size: int(dynamodblocal.ItemSize(item)), present: map[string]bool{}, image: true}
	for k := range item {
		w.present[k] = true
	}
	return w
}

// updateWrite is an update's write: its new image when returned, else
// its key and values, with the attributes its expression sets and removes.
func updateWrite(table string, key map[string]types.AttributeValue, expr *string, names map[string]string, values map[string]types.AttributeValue, returned map[string]types.AttributeValue) write {
	if len(returned) > 0 {
		w := putWrite(table, returned)
		w.key = key
		return w
	}
	w := write{table: table, key: key, size: int(dynamodblocal.ItemSize(key) + dynamodblocal.ItemSize(values)), present: map[string]bool{}, absent: map[string]bool{}}
	clause := ""
	for _, tok := range strings.FieldsFunc(aws.ToString(expr), func(r rune) bool {
		return r == ' ' || r == ',' || r == '=' || r == '(' || r == ')' || r == '+' || r == '-'
	}) {
		switch strings.ToUpper(tok) {
		case "SET", "REMOVE", "ADD", "DELETE":
			clause = strings.ToUpper(tok)
			continue
		}
		name := tok
		if n, ok := names[tok]; ok {
			name = n
		}
		switch clause {
		case "SET", "ADD":
			w.present[name] = true
		case "REMOVE":
			w.absent[name] = true
		}
	}
	return w
}

// usage is the accounting of calls and write units by table.
type usage struct {
	schemas map[string]tableSchema
	calls   map[string]map[string]map[string]float64 // function → table ("a+b" for two) → operation → calls
	units   map[string]map[string]float64            // table → "table" or "index <name>" → write units
	shadow  map[string]map[string]string             // item → index → its index key there
}

func newUsage(schemas map[string]tableSchema) *usage {
	return &usage{schemas: schemas, calls: map[string]map[string]map[string]float64{}, units: map[string]map[string]float64{}, shadow: map[string]map[string]string{}}
}

func add(m map[string]map[string]float64, a, b string, v float64) {
	if m[a] == nil {
		m[a] = map[string]float64{}
	}
	m[a][b] += v
}

// call accounts for one call of a function; ok says whether it succeeded.
func (u *usage) call(function, op string, in, out any, ok bool) {
	var ws []write
	factor := 1.0
	switch in := in.(type) {
	case *dynamodb.PutItemInput:
		ws = append(ws, putWrite(aws.ToString(in.TableName), in.Item))
	case *dynamodb.UpdateItemInput:
		var ret map[string]types.AttributeValue
		if o, _ := out.(*dynamodb.UpdateItemOutput); o != nil && in.ReturnValues == types.ReturnValueAllNew {
			ret = o.Attributes
		}
		ws = append(ws, updateWrite(aws.ToString(in.TableName), in.Key, in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues, ret))
	case *dynamodb.DeleteItemInput:
		ws = append(ws, write{table: aws.ToString(in.TableName), key: in.Key, delete: true})
	case *dynamodb.BatchWriteItemInput:
		for t, reqs := range in.RequestItems {
			for _, r := range reqs {
				if r.PutRequest != nil {
					ws = append(ws, putWrite(t, r.PutRequest.Item))
				} else if r.DeleteRequest != nil {
					ws = append(ws, write{table: t, key: r.DeleteRequest.Key, delete: true})
				}
			}
		}
	case *dynamodb.TransactWriteItemsInput:
		factor = 2
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				ws = append(ws, putWrite(aws.ToString(it.Put.TableName), it.Put.Item))
			case it.Update != nil:
				ws = append(ws, updateWrite(aws.ToString(it.Update.TableName), it.Update.Key, it.Update.UpdateExpression, it.Update.ExpressionAttributeNames, it.Update.ExpressionAttributeValues, nil))
			case it.Delete != nil:
				ws = append(ws, write{table: aws.ToString(it.Delete.TableName), key: it.Delete.Key, delete: true})
			case it.ConditionCheck != nil:
				add(u.units, aws.ToString(it.ConditionCheck.TableName), "table", factor)
			}
		}
	}
	if u.calls[function] == nil {
		u.calls[function] = map[string]map[string]float64{}
	}
	add(u.calls[function], strings.Join(tablesOf(in), "+"), op, 1)
	for _, w := range ws {
		if w.delete {
			add(u.units, w.table, "table", factor)
		} else {
			add(u.units, w.table, "table", factor*kb(w.size))
		}
		if ok {
			u.indexWrites(w)
		}
	}
}

// indexWrites counts the index writes of a successful write and moves
// the item on the shadow: one to enter or leave an index, two when its
// index key changes (a delete and a put), and for an index projecting
// every attribute one per KB whenever the item on it is rewritten; a
// write that changes nothing an index holds costs it nothing.
func (u *usage) indexWrites(w write) {
	s := u.schemas[w.table]
	id := w.table + "|" + keyString(s.keys, w.key)
	was := u.shadow[id]
	now := map[string]string{}
	for _, ix := range s.indexes {
		before, after := was[ix.name], was[ix.name]
		switch {
		case w.delete:
			after = ""
		case w.image:
			after = ""
			if hasAll(w.present, ix.keys) {
				after = keyString(ix.keys, w.item)
			}
		default:
			for _, k := range ix.keys {
				if w.absent[k] {
					after = ""
				}
			}
			if hasAll(w.present, ix.keys) {
				after = "set by an update " + strings.Join(ix.keys, ",") // its values are not known: a change
			}
		}
		var units float64
		switch {
		case before == "" && after == "":
		case before == "" || after == "":
			units = 1
		case before != after:
			units = 2
		case ix.all:
			units = kb(w.size)
		}
		if units > 0 {
			add(u.units, w.table, "index "+ix.name, units)
		}
		if after != "" {
			now[ix.name] = after
		}
	}
	if len(now) == 0 {
		delete(u.shadow, id)
	} else {
		u.shadow[id] = now
	}
}

func hasAll(set map[string]bool, keys []string) bool {
	for _, k := range keys {
		if !set[k] {
			return false
		}
	}
	return true
}

func keyString(keys []string, item map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, k := range keys {
		if v, ok := item[k].(*types.AttributeValueMemberS); ok {
			b.WriteString(v.Value)
		}
		b.WriteByte('|')
	}
	return b.String()
}

// tablesOf names the tables a call reads or writes, sorted.
func tablesOf(in any) []string {
	set := map[string]bool{}
	switch in := in.(type) {
	case *dynamodb.GetItemInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.PutItemInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.UpdateItemInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.DeleteItemInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.QueryInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.ScanInput:
		set[aws.ToString(in.TableName)] = true
	case *dynamodb.BatchGetItemInput:
		for t := range in.RequestItems {
			set[t] = true
		}
	case *dynamodb.BatchWriteItemInput:
		for t := range in.RequestItems {
			set[t] = true
		}
	case *dynamodb.TransactWriteItemsInput:
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				set[aws.ToString(it.Put.TableName)] = true
			case it.Update != nil:
				set[aws.ToString(it.Update.TableName)] = true
			case it.Delete != nil:
				set[aws.ToString(it.Delete.TableName)] = true
			case it.ConditionCheck != nil:
				set[aws.ToString(it.ConditionCheck.TableName)] = true
			}
		}
	case *dynamodb.TransactGetItemsInput:
		for _, it := range in.TransactItems {
			if it.Get != nil {
				set[aws.ToString(it.Get.TableName)] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	if len(out) == 0 {
		out = append(out, "-")
	}
	sort.Strings(out)
	return out
}
