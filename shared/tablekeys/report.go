package tablekeys

import (
	"fmt"
	"hash/fnv"
)

// The usage report's index on the state table: every cost ledger carries
// ReportPK = ReportPartition(day, ReportShard(user)) and ReportSK = its
// user, so the sparse GSI ReportIndex lists a day's user-days in
// ReportShards partitions. A day's ledger writes spread over the shards
// (no one index partition takes every batch's write of a day), and a
// report reads a day in ReportShards Queries.
const (
	ReportIndex = "reportDays"
	ReportPK    = "rptPk"
	ReportSK    = "rptSk"
	// ReportDigest is the ledger's usage digest, the one attribute the
	// index projects besides the keys.
	ReportDigest = "rpt"
	// ReportShards: at 10 million users, about 10,000 ledger writes a
	// second at the daily peak (docs/report.md) make about 160 a second a
	// shard, each of one or two write units of the projected digest,
	// under a partition's 1,000 a second; a report reads a day in 64
	// Queries.
	ReportShards = 64
)

// ReportShard is the user's shard of the report index: FNV-1a of the
// user id modulo ReportShards, stable across deployments.
func ReportShard(userID string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(userID))
	return int(h.Sum32() % ReportShards)
}

// ReportPartition is the report index's partition value of a day's shard.
func ReportPartition(day string, shard int) string {
	return fmt.Sprintf("RPT#%s#%02d", day, shard)
}
