package dynamodblocal

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// TemplateTable is a table as a synthesized CloudFormation template
// defines it (AWS::DynamoDB::Table): what CreateTable and UpdateTimeToLive
// take, so that a test can create the very table the stack deploys.
type TemplateTable struct {
	// ConstructID is the table's construct in the CDK app ("StateTable"),
	// the element before "Resource" in its aws:cdk:path.
	ConstructID string
	// Create has the keys, attributes, indexes with their projections, the
	// stream and the billing mode; TableName is left for the caller.
	Create dynamodb.CreateTableInput
	// TTLAttribute is the Time to Live attribute, "" when TTL is off.
	TTLAttribute string
}

// templateTableProperties are the properties of AWS::DynamoDB::Table that
// shape the table as the API sees it; the others (point-in-time recovery,
// deletion protection, encryption, tags) do not change a request's answer.
type templateTableProperties struct {
	AttributeDefinitions    []types.AttributeDefinition
	KeySchema               []types.KeySchemaElement
	GlobalSecondaryIndexes  []types.GlobalSecondaryIndex
	LocalSecondaryIndexes   []types.LocalSecondaryIndex
	BillingMode             types.BillingMode
	ProvisionedThroughput   *types.ProvisionedThroughput
	StreamSpecification     *struct{ StreamViewType types.StreamViewType }
	TimeToLiveSpecification *struct {
		AttributeName string
		Enabled       bool
	}
}

// TemplateTables reads the tables of the template at path, by construct id.
func TemplateTables(path string) (map[string]TemplateTable, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Metadata   map[string]any
			Properties json.RawMessage
		}
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		return nil, fmt.Errorf("template %s: %w", path, err)
	}
	out := map[string]TemplateTable{}
	for logical, r := range tpl.Resources {
		if r.Type != "AWS::DynamoDB::Table" {
			continue
		}
		var p templateTableProperties
		if err := json.Unmarshal(r.Properties, &p); err != nil {
			return nil, fmt.Errorf("template %s: table %s: %w", path, logical, err)
		}
		cdkPath, _ := r.Metadata["aws:cdk:path"].(string)
		parts := strings.Split(cdkPath, "/")
		id := logical
		if len(parts) >= 2 {
			id = parts[len(parts)-2]
		}
		t := TemplateTable{ConstructID: id, Create: dynamodb.CreateTableInput{
			AttributeDefinitions: p.AttributeDefinitions, KeySchema: p.KeySchema,
			GlobalSecondaryIndexes: p.GlobalSecondaryIndexes, LocalSecondaryIndexes: p.LocalSecondaryIndexes,
			BillingMode: p.BillingMode, ProvisionedThroughput: p.ProvisionedThroughput,
		}}
		if s := p.StreamSpecification; s != nil {
			t.Create.StreamSpecification = &types.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: s.StreamViewType}
		}
		if ttl := p.TimeToLiveSpecification; ttl != nil && ttl.Enabled {
			t.TTLAttribute = ttl.AttributeName
		}
		out[id] = t
	}
	return out, nil
}

// CreateTemplateTable creates t on the server as name, with its Time to
// Live.
func (s *Server) CreateTemplateTable(ctx context.Context, t TemplateTable, name string) error {
	db := s.Client()
	in := t.Create
	in.TableName = aws.String(name)
	if _, err := db.CreateTable(ctx, &in); err != nil {
		return fmt.Errorf("create table %s from the template's %s: %w", name, t.ConstructID, err)
	}
	if t.TTLAttribute == "" {
		return nil
	}
	_, err := db.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{
		TableName:               aws.String(name),
		TimeToLiveSpecification: &types.TimeToLiveSpecification{AttributeName: aws.String(t.TTLAttribute), Enabled: aws.Bool(true)},
	})
	if err != nil {
		return fmt.Errorf("time to live of %s: %w", name, err)
	}
	return nil
}
