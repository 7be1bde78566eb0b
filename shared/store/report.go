package store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/ledger"
	"github.com/commonly/runtime/shared/tablekeys"
)

// reportAttrs put a ledger item on the report index with its digest.
type reportAttrs struct {
	ReportPK string         `dynamodbav:"rptPk"`
	ReportSK string         `dynamodbav:"rptSk"`
	Digest   *ledger.Digest `dynamodbav:"rpt,omitempty"`
}

// reportOf is the report's attributes of w's ledger item: its digest,
// DigestOf(w.Next).
func reportOf(w ledger.Write) reportAttrs {
	d := ledger.DigestOf(w.Next)
	return reportAttrs{
		ReportPK: tablekeys.ReportPartition(w.Key.Day, tablekeys.ReportShard(w.Key.UserID)),
		ReportSK: w.Key.UserID,
		Digest:   &d,
	}
}

// reportIndex is the report index's definition (tablekeys.ReportIndex):
// the digest projected, nothing else, so a report reads a few hundred
// bytes a user-day and not the ledger's runs.
func reportIndex(hash, rng types.KeySchemaElement) types.GlobalSecondaryIndex {
	return types.GlobalSecondaryIndex{
		IndexName:  aws.String(tablekeys.ReportIndex),
		KeySchema:  []types.KeySchemaElement{hash, rng},
		Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{tablekeys.ReportDigest}},
	}
}

// UserDay is one user-day's digest as the report index holds it.
type UserDay struct {
	UserID string
	Day    string
	Digest ledger.Digest
}

// ReportShard hands each user-day of one shard of day on the report
// index to each (tablekeys.ReportShards shards a day; a reader may query
// them concurrently). The index is eventually consistent: a report of a
// day still being written may lag its ledgers by the index's propagation.
func (d *Dynamo) ReportShard(ctx context.Context, day string, shard int, each func(UserDay) error) error {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(d.tables.State),
		IndexName:                 aws.String(tablekeys.ReportIndex),
		KeyConditionExpression:    aws.String("#pk = :pk"),
		ExpressionAttributeNames:  map[string]string{"#pk": tablekeys.ReportPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": str(tablekeys.ReportPartition(day, shard))},
	}
	err := d.queryPages(ctx, in, 0, 0, func(item map[string]types.AttributeValue) error {
		u, err := DecodeUserDay(day, item)
		if err != nil {
			return err
		}
		return each(u)
	})
	if err != nil {
		return fmt.Errorf("read the report index of %s, shard %d: %w", day, shard, err)
	}
	return nil
}

// DecodeUserDay reads a report index item of day.
func DecodeUserDay(day string, item map[string]types.AttributeValue) (UserDay, error) {
	var it reportAttrs
	if err := attributevalue.UnmarshalMap(item, &it); err != nil {
		return UserDay{}, fmt.Errorf("decode the digest of %s on %s: %w", it.ReportSK, day, err)
	}
	u := UserDay{UserID: it.ReportSK, Day: day}
	if it.Digest != nil {
		u.Digest = *it.Digest
	}
	return u, nil
}
