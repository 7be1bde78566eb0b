package ledger

import "testing"

func TestSeqAfterComparesIntegers(t *testing.T) {
	cases := []struct {
		a, b string
		want bool
	}{
		{"2", "1", true},
		{"1", "2", false},
		{"5", "5", false},
		// A string comparison would get these wrong.
		{"10", "9", true},
		{"9", "10", false},
		{"1000000000000000000000", "999999999999999999999", true},
		{"999999999999999999999", "1000000000000000000000", false},
		// Beyond int64 (DynamoDB Streams numbers have up to 40 digits).
		{"4421584500000000017450439092", "4421584500000000017450439091", true},
		{"0000000000000000000000000000000000000012", "11", true},
		{"011", "11", false},
	}
	for _, c := range cases {
		if got := seqAfter(c.a, c.b); got != c.want {
			t.Errorf("seqAfter(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
}

func TestValidSeq(t *testing.T) {
	for s, want := range map[string]bool{
		"4421584500000000017450439091": true, "1": true,
		"": false, "-1": false, "12a": false, " 12": false, "1.5": false, "1e9": false,
	} {
		if got := validSeq(s); got != want {
			t.Errorf("validSeq(%q) = %v, want %v", s, got, want)
		}
	}
}
