package awscalls

import "regexp"

// equality is one "name = :value" of a key condition expression.
var equality = regexp.MustCompile(`([#\w]+)\s*=\s*(:\w+)`)

// queryKey is the KeyPrefix of the partition key a Query's key condition
// names (IAM's dynamodb:LeadingKeys of the Query), when it names the state
// table's partition key attribute; "" otherwise (an index's own key).
func queryKey(expr string, names map[string]string, value func(string) (string, bool)) string {
	for _, m := range equality.FindAllStringSubmatch(expr, -1) {
		name := m[1]
		if n, ok := names[name]; ok {
			name = n
		}
		if name != partitionKey {
			continue
		}
		if v, ok := value(m[2]); ok {
			return KeyPrefix(v)
		}
	}
	return ""
}
