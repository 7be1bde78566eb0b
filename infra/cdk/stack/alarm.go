package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Alarm settings, each with its reason.
const (
	// A batch of up to alarmBatchSize records is folded per user-day into
	// a few writes and at most a PutEvents each; a minute is far above
	// that and bounds a stuck batch before its retry.
	alarmTimeoutSeconds = 60
	// Records per batch, and how long Lambda gathers them: the alarm
	// trails the runs by seconds, and one batch folds many records.
	alarmBatchSize        = 100
	alarmBatchWindowSecs  = 2
	alarmRetryAttempts    = 10
	alarmMaxRecordAgeHour = 6
)

// Alarm is the alarm function: the runs stream → the per-user UTC-day
// ledger and the spend alarm on the bus.
type Alarm struct {
	*function
	// StreamFailures receives the shard ranges of batches given up on.
	StreamFailures awssqs.Queue
}

func newAlarm(scope constructs.Construct, s *Settings, d *Data, ev *Events) (*Alarm, error) {
	c := constructs.NewConstruct(scope, jsii.String("Alarm"))
	env := environment{
		"STATE_TABLE":    d.State.TableName(),
		"EVENT_BUS_NAME": ev.Bus.EventBusName(),
		// "" is the function's default threshold, 2.00 USD.
		"DAILY_SPEND_ALARM_USD": jsii.String(""),
	}
	fn, err := newFunction(c, s, functionSpec{
		id:          AlarmFunctionID,
		dir:         "alarm",
		description: "Commonly hosted runtime: the runs stream to each user's UTC-day cost, and the spend alarm",
		timeout:     awscdk.Duration_Seconds(jsii.Number(alarmTimeoutSeconds)),
		env:         env,
		override: func() error {
			return env.override(AlarmFunctionID, s.Environment[AlarmFunctionID], "STATE_TABLE", "EVENT_BUS_NAME")
		},
	})
	if err != nil {
		return nil, err
	}
	a := &Alarm{function: fn, StreamFailures: newFailureQueue(c, "StreamFailures")}
	fn.Function.AddEventSource(awslambdaeventsources.NewDynamoEventSource(d.Runs, &awslambdaeventsources.DynamoEventSourceProps{
		// From the oldest record kept: a new or re-created mapping must not
		// skip runs whose cost is not counted yet.
		StartingPosition:  awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:         jsii.Number(alarmBatchSize),
		MaxBatchingWindow: awscdk.Duration_Seconds(jsii.Number(alarmBatchWindowSecs)),
		// The handler reports the failed records (SequenceNumber); a batch
		// that fails whole is split to isolate a poison record.
		ReportBatchItemFailures: jsii.Bool(true),
		BisectBatchOnError:      jsii.Bool(true),
		// Bounded, so one bad record cannot stop the shard for the 24 h a
		// stream keeps it; 6 h leaves 18 h to read what failed (the queue
		// gets its shard and sequence range) and redrive it.
		RetryAttempts: jsii.Number(alarmRetryAttempts),
		MaxRecordAge:  awscdk.Duration_Hours(jsii.Number(alarmMaxRecordAgeHour)),
		// One batch per shard at a time: each run's records in order.
		ParallelizationFactor: jsii.Number(1),
		OnFailure:             awslambdaeventsources.NewSqsDlq(a.StreamFailures),
	}))
	// On the policy that holds the stream grants (the mapping made it).
	cdknag.NagSuppressions_AddResourceSuppressions(fn.Role.Node().FindChild(jsii.String("DefaultPolicy")), &[]*cdknag.NagPackSuppression{{
		Id:        jsii.String("AwsSolutions-IAM5"),
		Reason:    jsii.String("dynamodb:ListStreams has no resource-level permissions (it can only be granted on *); the event source mapping needs it. Every other stream action is granted on the runs table's stream ARN only."),
		AppliesTo: &[]any{"Resource::*"},
	}}, nil)
	// The state table: a batch's user-days and ledgers read in one
	// BatchGetItem (shared/store's ReadDays); the ledger put and the day
	// updated (its transaction, the alarm's mark), on users' partitions
	// only: not plans, which have partitions of their own (PLAN#).
	grantTable(fn.Role, d.State, []string{"BatchGetItem"})
	grantKeys(fn.Role, d.State, []string{"PutItem", "UpdateItem"}, userKeys)
	ev.Bus.GrantPutEventsTo(fn.Function, nil)
	return a, nil
}
