package core

import (
	"fmt"
	"sort"
	"strings"

	"github.com/truora/minidyn/interpreter/language"
	"github.com/truora/minidyn/types"
)

// MaxItemSize is DynamoDB's limit on an item: 400 KB, names and values
// counted as ItemSize counts them.
const MaxItemSize = 400 * 1024

// ItemSize is an item's size by DynamoDB's rules: each name and value in
// bytes (UTF-8), a number one byte per two significant digits plus one,
// a list or map three bytes plus one a member, a boolean or null one byte.
func ItemSize(item map[string]*types.Item) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}

	return n
}

func valueSize(v *types.Item) int {
	switch {
	case v == nil:
		return 0
	case v.S != nil:
		return len(*v.S)
	case v.N != nil:
		return numberSize(*v.N)
	case v.B != nil:
		return len(v.B)
	case v.SS != nil:
		n := 0
		for _, s := range v.SS {
			n += len(*s)
		}

		return n
	case v.NS != nil:
		n := 0
		for _, s := range v.NS {
			n += numberSize(*s)
		}

		return n
	case v.BS != nil:
		n := 0
		for _, b := range v.BS {
			n += len(b)
		}

		return n
	case v.L != nil:
		n := 3
		for _, e := range v.L {
			n += 1 + valueSize(e)
		}

		return n
	case v.M != nil:
		return 3 + len(v.M) + ItemSize(v.M)
	default: // BOOL, NULL
		return 1
	}
}

// numberSize counts a number's significant digits, two to a byte, plus one.
func numberSize(s string) int {
	mantissa, _, _ := strings.Cut(strings.ToLower(s), "e")
	digits := strings.Trim(strings.NewReplacer("-", "", "+", "", ".", "").Replace(mantissa), "0")

	return (len(digits)+1)/2 + 1
}

// checkNewItem refuses an item DynamoDB would not store: over 400 KB, or
// with an empty string or binary as a secondary index's key. update says
// the item is an UpdateItem's result (DynamoDB words its size error so).
func (t *Table) checkNewItem(item map[string]*types.Item, update bool) error {
	if ItemSize(item) > MaxItemSize {
		msg := "Item size has exceeded the maximum allowed size"
		if update {
			msg = "Item size to update has exceeded the maximum allowed size"
		}

		return types.NewError("ValidationException", msg, nil)
	}

	names := make([]string, 0, len(t.Indexes))
	for name := range t.Indexes {
		names = append(names, name)
	}

	sort.Strings(names)

	for _, name := range names {
		ks := t.Indexes[name].keySchema
		for _, attr := range []string{ks.HashKey, ks.RangeKey} {
			v := item[attr]
			if attr == "" || v == nil {
				continue
			}

			if (v.S != nil && *v.S == "") || (v.B != nil && len(v.B) == 0) {
				return types.NewError("ValidationException", fmt.Sprintf(
					"One or more parameter values are not valid. A value specified for a secondary index key is not supported. The AttributeValue for a key attribute cannot contain an empty string value. IndexName: %s, IndexKey: %s",
					name, attr), nil)
			}
		}
	}

	return nil
}

// IndexRead says what a Query or Scan asks of an index: DynamoDB refuses a
// consistent read of a global secondary index, and attributes the index
// does not project.
type IndexRead struct {
	Index                string
	ConsistentRead       bool
	Select               string // ALL_ATTRIBUTES, ALL_PROJECTED_ATTRIBUTES, SPECIFIC_ATTRIBUTES, COUNT or ""
	ProjectionExpression string
	Aliases              map[string]string
}

// CheckIndexRead refuses a read of a global secondary index that DynamoDB
// refuses: a consistent one, Select ALL_ATTRIBUTES when the index does not
// project every attribute, and a projection naming an attribute it does
// not project (a global index cannot fetch from the table). A read of the
// table or a local index passes.
func (t *Table) CheckIndexRead(r IndexRead) error {
	idx, ok := t.Indexes[r.Index]
	if r.Index == "" || !ok || idx.typ != indexTypeGlobal {
		return nil
	}

	if r.ConsistentRead {
		return types.NewError("ValidationException", "Consistent reads are not supported on global secondary indexes", nil)
	}

	projType := "ALL"
	if idx.projection != nil && idx.projection.ProjectionType != nil {
		projType = *idx.projection.ProjectionType
	}

	if projType == "ALL" {
		return nil
	}

	if r.Select == "ALL_ATTRIBUTES" {
		return types.NewError("ValidationException", fmt.Sprintf(
			"One or more parameter values were invalid: Select type ALL_ATTRIBUTES is not supported for global secondary index %s because its projection type is not ALL", r.Index), nil)
	}

	projected := map[string]bool{
		t.KeySchema.HashKey: true, t.KeySchema.RangeKey: true,
		idx.keySchema.HashKey: true, idx.keySchema.RangeKey: true,
	}

	if projType == "INCLUDE" && idx.projection != nil {
		for _, a := range idx.projection.NonKeyAttributes {
			projected[*a] = true
		}
	}

	var missing []string

	for _, name := range projectionRoots(r.ProjectionExpression, r.Aliases) {
		if !projected[name] {
			missing = append(missing, name)
		}
	}

	if len(missing) > 0 {
		return types.NewError("ValidationException", fmt.Sprintf(
			"One or more parameter values were invalid: Global secondary index %s does not project [%s]", r.Index, strings.Join(missing, ", ")), nil)
	}

	return nil
}

// projectionRoots are the top-level attribute names a projection
// expression names, in order, each once, aliases resolved.
func projectionRoots(expr string, aliases map[string]string) []string {
	var roots []string

	seen := map[string]bool{}
	atRoot := true
	l := language.NewLexer(expr)

	for tok := l.NextToken(); tok.Type != language.EOF; tok = l.NextToken() {
		switch {
		case tok.Type == language.COMMA:
			atRoot = true
		case tok.Type == language.IDENT && atRoot:
			name := tok.Literal
			if resolved, ok := aliases[name]; ok {
				name = resolved
			}

			if !seen[name] {
				seen[name] = true
				roots = append(roots, name)
			}

			atRoot = false
		}
	}

	return roots
}

// HashKeyOf is the partition key of the table (index "") or of its index.
func (t *Table) HashKeyOf(index string) (string, bool) {
	if index == "" {
		return t.KeySchema.HashKey, true
	}

	idx, ok := t.Indexes[index]
	if !ok {
		return "", false
	}

	return idx.keySchema.HashKey, true
}
