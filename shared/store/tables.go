package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/tablekeys"
)

// tableCreator is what CreateTables needs.
type tableCreator interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTimeToLive(ctx context.Context, in *dynamodb.DescribeTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.DescribeTimeToLiveOutput, error)
	UpdateTimeToLive(ctx context.Context, in *dynamodb.UpdateTimeToLiveInput, opts ...func(*dynamodb.Options)) (*dynamodb.UpdateTimeToLiveOutput, error)
}

var _ tableCreator = (*dynamodb.Client)(nil)

// CreateTables creates both tables with the schema the CDK stack deploys
// (keys, the live-sandbox and run-sandboxes indexes, the open-runs and
// user-runs indexes, the runs stream) and enables their Time to Live on tablekeys.TTL. It is for
// the local stack and tests; in AWS the stack owns the tables. Existing
// tables are left alone, but get their TTL if it is off.
func CreateTables(ctx context.Context, db tableCreator, t Tables) error {
	s := func(name string) types.AttributeDefinition {
		return types.AttributeDefinition{AttributeName: aws.String(name), AttributeType: types.ScalarAttributeTypeS}
	}
	hash := func(name string) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeHash}
	}
	rng := func(name string) types.KeySchemaElement {
		return types.KeySchemaElement{AttributeName: aws.String(name), KeyType: types.KeyTypeRange}
	}
	inputs := []*dynamodb.CreateTableInput{
		{
			TableName:            aws.String(t.State),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(tablekeys.PK), s(tablekeys.SK), s(tablekeys.GSI1PK), s(tablekeys.GSI1SK), s(tablekeys.RunID), s(tablekeys.SandboxID), s(tablekeys.ReportPK), s(tablekeys.ReportSK)},
			KeySchema:            []types.KeySchemaElement{hash(tablekeys.PK), rng(tablekeys.SK)},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName:  aws.String(tablekeys.LiveIndex),
				KeySchema:  []types.KeySchemaElement{hash(tablekeys.GSI1PK), rng(tablekeys.GSI1SK)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}, {
				IndexName:  aws.String(tablekeys.RunSandboxesIndex),
				KeySchema:  []types.KeySchemaElement{hash(tablekeys.RunID), rng(tablekeys.SandboxID)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}, reportIndex(hash(tablekeys.ReportPK), rng(tablekeys.ReportSK))},
		},
		{
			TableName:            aws.String(t.Runs),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(tablekeys.RunID), s(tablekeys.OpenPK), s(tablekeys.OpenSK), s(tablekeys.UserRunsPK), s(tablekeys.UserRunsSK)},
			KeySchema:            []types.KeySchemaElement{hash(tablekeys.RunID)},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName: aws.String(tablekeys.OpenIndex),
				KeySchema: []types.KeySchemaElement{hash(tablekeys.OpenPK), rng(tablekeys.OpenSK)},
				// Keys only: claims and checkpoints rewrite the run, not its
				// index entry, so they cost the index nothing.
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeKeysOnly},
			}, {
				IndexName: aws.String(tablekeys.UserRunsIndex),
				KeySchema: []types.KeySchemaElement{hash(tablekeys.UserRunsPK), rng(tablekeys.UserRunsSK)},
				// The final write's summary only: it never changes after,
				// so the index is written twice a run (userruns.go).
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeInclude, NonKeyAttributes: []string{tablekeys.UserRunsSummary}},
			}},
			StreamSpecification: &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
		},
	}
	for _, in := range inputs {
		_, err := db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
		}
		if err := enableTTL(ctx, db, aws.ToString(in.TableName)); err != nil {
			return err
		}
	}
	return nil
}

// enableTTL turns on the table's Time to Live on tablekeys.TTL unless it is on
// (or turning on) already.
func enableTTL(ctx context.Context, db tableCreator, table string) error {
	out, err := db.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table)})
	if err != nil {
		return fmt.Errorf("describe time to live of %s: %w", table, err)
	}
	if d := out.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == tablekeys.TTL &&
		(d.TimeToLiveStatus == types.TimeToLiveStatusEnabled || d.TimeToLiveStatus == types.TimeToLiveStatusEnabling) {
		return nil
	}
	_, err = db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(table),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(tablekeys.TTL), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("enable time to live on %s: %w", table, err)
	}
	return nil
}
