package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/shared/tablekeys"
)

// Construct ids of the tables, which `make invoke` finds them by.
const (
	StateTableID = "StateTable"
	RunsTableID  = "RunsTable"
)

// Data is the two tables, as store.CreateTables describes them (a test
// checks that they agree).
type Data struct {
	State awsdynamodb.Table
	Runs  awsdynamodb.Table
}

func newData(scope constructs.Construct, s *Settings) *Data {
	c := constructs.NewConstruct(scope, jsii.String("Data"))
	str := func(name string) *awsdynamodb.Attribute {
		return &awsdynamodb.Attribute{Name: jsii.String(name), Type: awsdynamodb.AttributeType_STRING}
	}
	// Production data outlives a mistaken delete of the stack or the table;
	// other stages' data is disposable.
	removal := awscdk.RemovalPolicy_DESTROY
	if s.Production {
		removal = awscdk.RemovalPolicy_RETAIN
	}
	common := func(p *awsdynamodb.TableProps) *awsdynamodb.TableProps {
		p.BillingMode = awsdynamodb.BillingMode_PAY_PER_REQUEST
		p.TimeToLiveAttribute = jsii.String(tablekeys.TTL)
		p.PointInTimeRecoverySpecification = &awsdynamodb.PointInTimeRecoverySpecification{PointInTimeRecoveryEnabled: jsii.Bool(true)}
		p.DeletionProtection = jsii.Bool(s.Production)
		p.RemovalPolicy = removal
		return p
	}
	d := &Data{
		// Installs, plans, per-user-day usage, idempotency keys, sandboxes.
		State: awsdynamodb.NewTable(c, jsii.String(StateTableID), common(&awsdynamodb.TableProps{
			PartitionKey: str(tablekeys.PK),
			SortKey:      str(tablekeys.SK),
		})),
		// One AgentRun per item; its stream feeds the alarm function.
		Runs: awsdynamodb.NewTable(c, jsii.String(RunsTableID), common(&awsdynamodb.TableProps{
			PartitionKey: str(tablekeys.RunID),
			Stream:       awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES,
		})),
	}
	// Live sandboxes, sparse, so the reaper finds the expired ones without a scan.
	d.State.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(tablekeys.LiveIndex),
		PartitionKey:   str(tablekeys.GSI1PK),
		SortKey:        str(tablekeys.GSI1SK),
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	// Every sandbox by its run, so the reaper finds an abandoned run's
	// sandboxes in one Query.
	d.State.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(tablekeys.RunSandboxesIndex),
		PartitionKey:   str(tablekeys.RunID),
		SortKey:        str(tablekeys.SandboxID),
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	// Cost ledgers by day, sparse, sharded and projecting the usage
	// digest only, so `make report` lists a day's user-days without a scan.
	d.State.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:        jsii.String(tablekeys.ReportIndex),
		PartitionKey:     str(tablekeys.ReportPK),
		SortKey:          str(tablekeys.ReportSK),
		ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes: jsii.Strings(tablekeys.ReportDigest),
	})
	// The tables' names, for operators' tools (`make report`).
	awscdk.NewCfnOutput(scope, jsii.String("StateTableName"), &awscdk.CfnOutputProps{
		Value: d.State.TableName(), Description: jsii.String("STATE_TABLE for make report"),
	})
	awscdk.NewCfnOutput(scope, jsii.String("RunsTableName"), &awscdk.CfnOutputProps{
		Value: d.Runs.TableName(), Description: jsii.String("RUNS_TABLE for make report"),
	})
	// Open runs, sparse and keys only, so the reaper finds the abandoned
	// ones without a scan, and claims and checkpoints cost it nothing.
	d.Runs.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(tablekeys.OpenIndex),
		PartitionKey:   str(tablekeys.OpenPK),
		SortKey:        str(tablekeys.OpenSK),
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY,
	})
	// Each user's runs, newest first (GET /v1/me/runs), projecting the
	// summary a run's final write adds and nothing that changes before:
	// two index writes a run (tablekeys/userruns.go).
	d.Runs.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:        jsii.String(tablekeys.UserRunsIndex),
		PartitionKey:     str(tablekeys.UserRunsPK),
		SortKey:          str(tablekeys.UserRunsSK),
		ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes: jsii.Strings(tablekeys.UserRunsSummary),
	})
	return d
}
