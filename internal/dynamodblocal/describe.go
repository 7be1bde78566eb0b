package dynamodblocal

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TableInfo is what the server reports of a table's stream and TTL.
type TableInfo struct {
	Name string
	// StreamViewType and StreamARN are "" when the table has no enabled stream.
	StreamViewType, StreamARN string
	// TTLAttribute is "" when TTL is disabled.
	TTLAttribute string
}

// String reads like "runs: stream NEW_AND_OLD_IMAGES, TTL on ttl".
func (t TableInfo) String() string {
	stream, ttl := "no stream", "no TTL"
	if t.StreamViewType != "" {
		stream = "stream " + t.StreamViewType
	}
	if t.TTLAttribute != "" {
		ttl = "TTL on " + t.TTLAttribute
	}
	return t.Name + ": " + stream + ", " + ttl
}

// Describe asks the server, through the SDK, for the stream and TTL of
// each table.
func (s *Server) Describe(ctx context.Context, tables ...string) ([]TableInfo, error) {
	out := make([]TableInfo, 0, len(tables))
	for _, t := range tables {
		info, err := s.describe(ctx, t)
		if err != nil {
			return nil, err
		}
		out = append(out, info)
	}
	return out, nil
}

func (s *Server) describe(ctx context.Context, table string) (TableInfo, error) {
	db := s.Client()
	info := TableInfo{Name: table}
	desc, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(table)})
	if err != nil {
		return info, fmt.Errorf("describe table %s: %w", table, err)
	}
	if spec := desc.Table.StreamSpecification; spec != nil && aws.ToBool(spec.StreamEnabled) {
		info.StreamViewType, info.StreamARN = string(spec.StreamViewType), aws.ToString(desc.Table.LatestStreamArn)
	}
	ttl, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return info, fmt.Errorf("describe time to live of %s: %w", table, err)
	}
	if d := ttl.TimeToLiveDescription; d != nil && d.TimeToLiveStatus == types.TimeToLiveStatusEnabled {
		info.TTLAttribute = aws.ToString(d.AttributeName)
	}
	return info, nil
}
