package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/commonly/runtime/shared/keys"
)

// tableCreator is what CreateTables needs.
type tableCreator interface {
	CreateTable(ctx context.Context, in *dynamodb.CreateTableInput, opts ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
}

// CreateTables creates both tables with the schema the CDK stack deploys
// (keys and the live-sandbox index). It is for the local stack and tests;
// in AWS the stack owns the tables. Existing tables are left alone.
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
			AttributeDefinitions: []types.AttributeDefinition{s(keys.PK), s(keys.SK), s(keys.GSI1PK), s(keys.GSI1SK)},
			KeySchema:            []types.KeySchemaElement{hash(keys.PK), rng(keys.SK)},
			GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
				IndexName:  aws.String(keys.LiveIndex),
				KeySchema:  []types.KeySchemaElement{hash(keys.GSI1PK), rng(keys.GSI1SK)},
				Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
			}},
		},
		{
			TableName:            aws.String(t.Runs),
			BillingMode:          types.BillingModePayPerRequest,
			AttributeDefinitions: []types.AttributeDefinition{s(keys.RunID)},
			KeySchema:            []types.KeySchemaElement{hash(keys.RunID)},
			StreamSpecification:  &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: types.StreamViewTypeNewAndOldImages},
		},
	}
	for _, in := range inputs {
		_, err := db.CreateTable(ctx, in)
		var inUse *types.ResourceInUseException
		if err != nil && !errors.As(err, &inUse) {
			return fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
		}
	}
	return nil
}
