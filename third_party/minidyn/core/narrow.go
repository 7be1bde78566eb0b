package core

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/truora/minidyn/types"
)

// keyEquality finds the "name = :value" comparisons of a key condition
// (either way round); "<=" and ">=" never match, as the character before
// their "=" is not part of a name.
var keyEquality = regexp.MustCompile(`([#:A-Za-z0-9_.\-]+)\s*=\s*([#:A-Za-z0-9_.\-]+)`)

// keyFilter narrows a Query to the stored keys of one partition: every
// item its key condition can match has a key that starts with prefix
// (exact: equals it, for a key without a range). It only narrows: the
// key condition is still evaluated on every item kept, so a key of
// another partition that shares the prefix (a hash value holding a ".")
// changes nothing.
type keyFilter struct {
	prefix string
	exact  bool
}

func (f keyFilter) match(key string) bool {
	if f.exact {
		return key == f.prefix
	}

	return strings.HasPrefix(key, f.prefix)
}

// partitionFilter is the filter of a Query's key condition on ks: the
// equality on the hash key (required by DynamoDB) gives the partition.
// false when it cannot tell (a Scan, no such equality, a value that is
// not of the key's type): then nothing is narrowed.
func (input QueryInput) partitionFilter(ks keySchema, attrs map[string]string) (keyFilter, bool) {
	if input.Scan || input.KeyConditionExpression == "" {
		return keyFilter{}, false
	}

	for _, m := range keyEquality.FindAllStringSubmatch(input.KeyConditionExpression, -1) {
		name, value := m[1], m[2]
		if strings.HasPrefix(name, ":") {
			name, value = value, name
		}

		if !strings.HasPrefix(value, ":") || strings.HasPrefix(name, ":") {
			continue
		}

		if strings.HasPrefix(name, "#") {
			alias, ok := input.Aliases[name]
			if !ok {
				continue
			}

			name = alias
		}

		if name != ks.HashKey {
			continue
		}

		v, ok := input.ExpressionAttributeValues[value]
		if !ok || v == nil {
			return keyFilter{}, false
		}

		// As keySchema.getKeyValue formats a stored key's hash.
		val, err := getItemValue(map[string]*types.Item{name: v}, name, attrs[name])
		if err != nil {
			return keyFilter{}, false
		}

		hash := fmt.Sprintf("%v", val)
		if ks.RangeKey == "" {
			return keyFilter{prefix: hash, exact: true}, true
		}

		return keyFilter{prefix: hash + "."}, true
	}

	return keyFilter{}, false
}

// narrowSorted is the run of sorted keys the filter keeps: contiguous, as
// the keys sharing a prefix are in lexical order.
func narrowSorted(sorted []string, f keyFilter) []string {
	lo := sort.SearchStrings(sorted, f.prefix)
	hi := lo

	for hi < len(sorted) && f.match(sorted[hi]) {
		hi++
	}

	return sorted[lo:hi]
}

// startNarrowSearch is startSearch over one partition's references only:
// it returns their index keys in ascending order and leaves sortedRefs in
// the search's order, in step with them (getPrimaryKey consumes both
// together). Its cost is a prefix test per reference and a sort of the
// partition, not a key condition evaluated on every item of the index.
func (i *index) startNarrowSearch(scanForward bool, f keyFilter) []string {
	refs := make([][2]string, 0, 8)

	for pk, ik := range i.refs {
		if f.match(ik) {
			refs = append(refs, [2]string{pk, ik})
		}
	}

	slices.SortFunc(refs, func(a, b [2]string) int {
		if c := strings.Compare(a[1], b[1]); c != 0 {
			return c
		}

		return strings.Compare(a[0], b[0])
	})

	keys := make([]string, len(refs))
	for n, r := range refs {
		keys[n] = r[1]
	}

	if !scanForward {
		slices.Reverse(refs)
	}

	i.sortedRefs = refs

	return keys
}
