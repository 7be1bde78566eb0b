package main

import (
	"maps"
	"slices"
	"strings"
)

// reportCommand is the command that renders the local stack's usage
// report (`make report`, docs/report.md) while the stack runs: its
// tables, and the embedded DynamoDB's endpoint and dummy credentials.
func reportCommand(stateTable string, awsEnv map[string]string) string {
	var b strings.Builder
	b.WriteString("STATE_TABLE=" + stateTable)
	for _, k := range slices.Sorted(maps.Keys(awsEnv)) {
		b.WriteString(" " + k + "=" + awsEnv[k])
	}
	b.WriteString(" make report")
	return b.String()
}
