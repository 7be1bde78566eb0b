package server

import (
	"bytes"
	"math/big"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/truora/minidyn/core"
	"github.com/truora/minidyn/types"
)

// ItemChange is one committed change of one item in a table whose stream is
// enabled: what a DynamoDB Streams record is made of. Both images are given
// whatever the stream's view type; the consumer keeps what the view type
// says.
type ItemChange struct {
	TableName      string
	StreamARN      string
	StreamViewType ddbtypes.StreamViewType
	// Keys are the item's primary key attributes.
	Keys map[string]ddbtypes.AttributeValue
	// OldImage is nil when the write created the item.
	OldImage map[string]ddbtypes.AttributeValue
	// NewImage is nil when the write removed the item.
	NewImage map[string]ddbtypes.AttributeValue
	// Expired marks a removal by the Time to Live process (ExpireItems), which
	// DynamoDB attributes to its service principal.
	Expired bool
}

// tableMeta is what a table has beyond its data: its stream and its TTL.
type tableMeta struct {
	streamViewType ddbtypes.StreamViewType // "" when the stream is disabled
	streamLabel    string
	streamARN      string
	ttlAttribute   string // "" when TTL is disabled
}

func (m *tableMeta) streamEnabled() bool { return m != nil && m.streamViewType != "" }

// touched is an item a write is about to change: its key and a copy of its
// stored state before the write (nil: there was none). Transactions undo
// with it; the change listener compares it with the state after.
type touched struct {
	table *core.Table
	key   string
	old   map[string]*types.Item
}

func touch(table *core.Table, key string) touched {
	return touched{table: table, key: key, old: table.ItemCopy(key)}
}

// watch returns the item a single-item write on table is about to change
// when its changes are listened to (and its key resolves; otherwise the
// write fails before it changes anything). Callers hold c.mu.
func (c *Client) watch(table *core.Table, keyItem map[string]*AttributeValue) (touched, bool) {
	if c.onChange == nil || !c.meta[table.Name].streamEnabled() {
		return touched{}, false
	}

	key, err := table.KeySchema.GetKey(table.AttributesDef, mapAttributeValueMapToTypes(keyItem))
	if err != nil {
		return touched{}, false
	}

	return touch(table, key), true
}

// publish gives the listener the changes of one successful write request:
// one per item whose stored state differs from before (a write that changed
// nothing has no record, as in DynamoDB). Callers hold c.mu, so the
// listener sees writes in commit order.
func (c *Client) publish(expired bool, items ...touched) {
	if c.onChange == nil {
		return
	}

	changes := make([]ItemChange, 0, len(items))

	for _, t := range items {
		m := c.meta[t.table.Name]
		if !m.streamEnabled() {
			continue
		}

		current := t.table.Data[t.key]
		if sameItem(t.old, current) {
			continue
		}

		image := current
		if image == nil {
			image = t.old
		}

		changes = append(changes, ItemChange{
			TableName:      t.table.Name,
			StreamARN:      m.streamARN,
			StreamViewType: m.streamViewType,
			Keys:           streamImage(t.table.KeyItem(image)),
			OldImage:       streamImage(t.old),
			NewImage:       streamImage(current),
			Expired:        expired,
		})
	}

	if len(changes) > 0 {
		c.onChange(changes)
	}
}

// streamImage maps a stored item to SDK attribute values exactly: an empty
// list or map stays one (mapTypesToDDBAttributeValue makes them NULL).
func streamImage(item map[string]*types.Item) map[string]ddbtypes.AttributeValue {
	if item == nil {
		return nil
	}

	out := make(map[string]ddbtypes.AttributeValue, len(item))
	for k, v := range item {
		out[k] = streamValue(v)
	}

	return out
}

//nolint:gocyclo // one case per attribute type
func streamValue(it *types.Item) ddbtypes.AttributeValue {
	switch {
	case it == nil:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}
	case it.S != nil:
		return &ddbtypes.AttributeValueMemberS{Value: *it.S}
	case it.N != nil:
		return &ddbtypes.AttributeValueMemberN{Value: *it.N}
	case it.B != nil:
		return &ddbtypes.AttributeValueMemberB{Value: slices.Clone(it.B)}
	case it.BOOL != nil:
		return &ddbtypes.AttributeValueMemberBOOL{Value: *it.BOOL}
	case it.SS != nil:
		return &ddbtypes.AttributeValueMemberSS{Value: fromStringPtrs(it.SS)}
	case it.NS != nil:
		return &ddbtypes.AttributeValueMemberNS{Value: fromStringPtrs(it.NS)}
	case it.BS != nil:
		bs := make([][]byte, len(it.BS))
		for i, b := range it.BS {
			bs[i] = slices.Clone(b)
		}

		return &ddbtypes.AttributeValueMemberBS{Value: bs}
	case it.L != nil:
		l := make([]ddbtypes.AttributeValue, len(it.L))
		for i, v := range it.L {
			l[i] = streamValue(v)
		}

		return &ddbtypes.AttributeValueMemberL{Value: l}
	case it.M != nil:
		return &ddbtypes.AttributeValueMemberM{Value: streamImage(it.M)}
	default:
		return &ddbtypes.AttributeValueMemberNULL{Value: true}
	}
}

// sameItem says whether two stored states are the same item: both absent,
// or the same attributes with equal values (numbers by value, sets in any
// order).
func sameItem(a, b map[string]*types.Item) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}

	for k, av := range a {
		bv, ok := b[k]
		if !ok || !sameValue(av, bv) {
			return false
		}
	}

	return true
}

//nolint:gocyclo // one case per attribute type
func sameValue(a, b *types.Item) bool {
	if a == nil || b == nil {
		return a == b
	}

	switch {
	case a.S != nil || b.S != nil:
		return a.S != nil && b.S != nil && *a.S == *b.S
	case a.N != nil || b.N != nil:
		return a.N != nil && b.N != nil && sameNumber(*a.N, *b.N)
	case a.B != nil || b.B != nil:
		return a.B != nil && b.B != nil && bytes.Equal(a.B, b.B)
	case a.BOOL != nil || b.BOOL != nil:
		return a.BOOL != nil && b.BOOL != nil && *a.BOOL == *b.BOOL
	case a.SS != nil || b.SS != nil:
		return a.SS != nil && b.SS != nil && sameSet(fromStringPtrs(a.SS), fromStringPtrs(b.SS), func(x, y string) bool { return x == y })
	case a.NS != nil || b.NS != nil:
		return a.NS != nil && b.NS != nil && sameSet(fromStringPtrs(a.NS), fromStringPtrs(b.NS), sameNumber)
	case a.BS != nil || b.BS != nil:
		return a.BS != nil && b.BS != nil && sameSet(a.BS, b.BS, bytes.Equal)
	case a.L != nil || b.L != nil:
		return a.L != nil && b.L != nil && slices.EqualFunc(a.L, b.L, sameValue)
	case a.M != nil || b.M != nil:
		return a.M != nil && b.M != nil && sameItem(a.M, b.M)
	default:
		return aws.ToBool(a.NULL) == aws.ToBool(b.NULL)
	}
}

func sameNumber(x, y string) bool {
	if x == y {
		return true
	}

	rx, okx := new(big.Rat).SetString(x)
	ry, oky := new(big.Rat).SetString(y)

	return okx && oky && rx.Cmp(ry) == 0
}

// sameSet compares two sets (no duplicates, any order).
func sameSet[T any](a, b []T, eq func(T, T) bool) bool {
	if len(a) != len(b) {
		return false
	}

	for _, x := range a {
		if !slices.ContainsFunc(b, func(y T) bool { return eq(x, y) }) {
			return false
		}
	}

	return true
}
