package ledger

import "strings"

// validSeq reports whether s is a stream SequenceNumber: a decimal
// integer (DynamoDB Streams gives up to 40 digits, beyond int64).
func validSeq(s string) bool {
	return s != "" && len(s) <= 64 && strings.Trim(s, "0123456789") == ""
}

// seqAfter reports whether sequence number a comes after b, compared as
// the integers they are: a longer number (leading zeros aside) is the
// larger, and only numbers of equal length compare digit by digit.
func seqAfter(a, b string) bool {
	a, b = strings.TrimLeft(a, "0"), strings.TrimLeft(b, "0")
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a > b
}
