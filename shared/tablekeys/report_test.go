package tablekeys

import (
	"fmt"
	"testing"
)

// The report shard is stable (a deployment's readers and writers must
// agree) and spreads users over every shard.
func TestReportShard(t *testing.T) {
	if got := ReportPartition("2026-10-03", 7); got != "RPT#2026-10-03#07" {
		t.Errorf("ReportPartition = %q", got)
	}
	seen := map[int]int{}
	for i := range 64 * 200 {
		s := ReportShard(fmt.Sprintf("user-%d", i))
		if s < 0 || s >= ReportShards || s != ReportShard(fmt.Sprintf("user-%d", i)) {
			t.Fatalf("shard %d", s)
		}
		seen[s]++
	}
	for s := range ReportShards {
		if seen[s] < 100 || seen[s] > 300 {
			t.Errorf("shard %d holds %d of 12,800 users, want about 200", s, seen[s])
		}
	}
}
