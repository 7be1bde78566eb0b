package stack

import (
	"fmt"
	"strings"
	"testing"
)

// evalCondition evaluates a policy statement's Condition block against a
// request's condition keys (each a set of values; a key the request does
// not carry is absent), as IAM does for the operators the stack uses:
// the String operators Equals and Like, with the set qualifiers
// ForAllValues (every request value matches; true when the key is absent
// or empty) and ForAnyValue (some value matches), and the IfExists
// suffix. Every operator and every key of the block must hold. An
// operator it does not know is an error, so a new kind of condition in the
// stack is taught here before any test relies on it.
func evalCondition(cond map[string]any, keys map[string][]string) (bool, error) {
	for op, block := range cond {
		byKey, ok := block.(map[string]any)
		if !ok {
			return false, fmt.Errorf("condition %s: not a block: %v", op, block)
		}
		qualifier, base, _ := strings.Cut(op, ":")
		if base == "" {
			qualifier, base = "", op
		}
		base, ifExists := strings.CutSuffix(base, "IfExists")
		var match func(pattern, value string) bool
		switch base {
		case "StringEquals":
			match = func(p, v string) bool { return p == v }
		case "StringLike":
			match = globMatch
		default:
			return false, fmt.Errorf("condition operator %s: the evaluator does not know it", op)
		}
		for key, raw := range byKey {
			patterns, err := stringsOf(raw)
			if err != nil {
				return false, fmt.Errorf("condition %s %s: %w", op, key, err)
			}
			values, present := keys[key]
			matchesAny := func(v string) bool {
				for _, p := range patterns {
					if match(p, v) {
						return true
					}
				}
				return false
			}
			var holds bool
			switch qualifier {
			case "ForAllValues":
				holds = true
				for _, v := range values {
					holds = holds && matchesAny(v)
				}
			case "ForAnyValue":
				for _, v := range values {
					holds = holds || matchesAny(v)
				}
			case "":
				switch {
				case !present:
					holds = ifExists
				case len(values) != 1:
					return false, fmt.Errorf("condition %s %s: a single-valued operator on %d values", op, key, len(values))
				default:
					holds = matchesAny(values[0])
				}
			default:
				return false, fmt.Errorf("condition qualifier %s: the evaluator does not know it", qualifier)
			}
			if !holds {
				return false, nil
			}
		}
	}
	return true, nil
}

func stringsOf(raw any) ([]string, error) {
	switch v := raw.(type) {
	case string:
		return []string{v}, nil
	case []any:
		out := make([]string, len(v))
		for i, e := range v {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("a value that is not a string: %v", e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("values of type %T", raw)
}

// globMatch is IAM's StringLike: "*" any run of characters, "?" one,
// case-sensitive.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	switch pattern[0] {
	case '*':
		for i := 0; i <= len(s); i++ {
			if globMatch(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	case '?':
		return s != "" && globMatch(pattern[1:], s[1:])
	}
	return s != "" && s[0] == pattern[0] && globMatch(pattern[1:], s[1:])
}

func TestEvalCondition(t *testing.T) {
	leading := map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []any{"USER#*", "SANDBOX#*"}}}
	for _, c := range []struct {
		name string
		cond map[string]any
		keys map[string][]string
		want bool
	}{
		{"every key in a prefix", leading, map[string][]string{"dynamodb:LeadingKeys": {"USER#u1", "SANDBOX#s"}}, true},
		{"one key outside", leading, map[string][]string{"dynamodb:LeadingKeys": {"USER#u1", "INSTALL#i"}}, false},
		{"a prefix without its #", leading, map[string][]string{"dynamodb:LeadingKeys": {"USERS"}}, false},
		{"ForAllValues of an absent key holds", leading, nil, true},
		{"ForAnyValue of an absent key fails", map[string]any{"ForAnyValue:StringEquals": map[string]any{"k": "a"}}, nil, false},
		{"ForAnyValue one match", map[string]any{"ForAnyValue:StringEquals": map[string]any{"k": []any{"a"}}}, map[string][]string{"k": {"b", "a"}}, true},
		{"single-valued", map[string]any{"StringEquals": map[string]any{"k": "a"}}, map[string][]string{"k": {"a"}}, true},
		{"single-valued absent", map[string]any{"StringEquals": map[string]any{"k": "a"}}, nil, false},
		{"IfExists absent", map[string]any{"StringEqualsIfExists": map[string]any{"k": "a"}}, nil, true},
		{"? is one character", map[string]any{"StringLike": map[string]any{"k": "a?c"}}, map[string][]string{"k": {"abc"}}, true},
		{"case-sensitive", map[string]any{"StringLike": map[string]any{"k": "user#*"}}, map[string][]string{"k": {"USER#u"}}, false},
	} {
		got, err := evalCondition(c.cond, c.keys)
		if err != nil || got != c.want {
			t.Errorf("%s: %v, %v; want %v", c.name, got, err, c.want)
		}
	}
	if _, err := evalCondition(map[string]any{"NumericLessThan": map[string]any{"k": "1"}}, nil); err == nil {
		t.Error("an operator the evaluator does not know was evaluated")
	}
}
