package tablekeys

// The usage report's index on the state table: every cost ledger carries
// ReportPK = ReportPartition(day, ReportShard(user)) and ReportSK = its
// user, so the sparse GSI ReportIndex lists a day's user-days in
// ReportShards partitions (the count is fixed: a reader must know every
// shard of a day that was written). A day's ledger writes spread over the shards
// (no one index partition takes every batch's write of a day), and a
// report reads a day in ReportShards Queries.
const (
	ReportIndex = "reportDays"
	ReportPK    = "rptPk"
	ReportSK    = "rptSk"
	// ReportDigest is the ledger's usage digest, the one attribute the
	// index projects besides the keys.
	ReportDigest = "rpt"
	// ReportShards: at 10 million daily users the peak is about 10,400
	// turns a second (DefaultIndexShards' arithmetic); at about two ledger
	// writes a turn that is 21,000 index writes a second, 330 a shard, each
	// one write unit (the projected item is under 1 KB), a third of a
	// partition key's 1,000 a second (docs/report.md). A report reads a
	// day in 64 Queries.
	ReportShards = 64
	reportPrefix = "RPT#"
)

// ReportShard is the user's shard of the report index (Shard: FNV-1a,
// stable across processes and releases).
func ReportShard(userID string) int { return Shard(userID, ReportShards) }

// ReportPartition is the report index's partition value of a day's shard.
func ReportPartition(day string, shard int) string {
	return partition(reportPrefix+day, shard)
}
