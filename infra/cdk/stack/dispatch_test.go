package stack

import (
	"testing"
)

// TestAsyncInvokeSettings: the turn's self-invoke retries twice within
// 15 minutes and then goes to its queue; the reaper's scheduled
// invocations are never retried.
func TestAsyncInvokeSettings(t *testing.T) {
	x := synth(t, devSettings())
	byFunction := map[string]map[string]any{}
	for _, r := range x.ofType("AWS::Lambda::EventInvokeConfig") {
		p := r["Properties"].(map[string]any)
		byFunction[p["FunctionName"].(map[string]any)["Ref"].(string)] = p
	}
	equal(t, "turn async config", byFunction[x.id(x.Turn.Function)], map[string]any{
		"FunctionName": ref(x.id(x.Turn.Function)), "Qualifier": "$LATEST",
		"MaximumRetryAttempts": 2, "MaximumEventAgeInSeconds": 900,
		"DestinationConfig": map[string]any{"OnFailure": map[string]any{"Destination": getAtt(x.id(x.Turn.DispatchFailures), "Arn")}},
	})
	equal(t, "reaper async config", byFunction[x.id(x.Reaper.Function)], map[string]any{
		"FunctionName": ref(x.id(x.Reaper.Function)), "Qualifier": "$LATEST",
		"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60,
	})
	if len(byFunction) != 2 {
		t.Errorf("async configs for %v", sortedKeys(byFunction))
	}
	for _, q := range []string{x.id(x.Turn.DispatchFailures), x.id(x.Alarm.StreamFailures)} {
		equal(t, q+" queue", x.props(t, q), map[string]any{"SqsManagedSseEnabled": true, "MessageRetentionPeriod": 1209600})
	}
	// Every queue refuses requests without TLS.
	for _, q := range []string{x.id(x.Turn.DispatchFailures), x.id(x.Alarm.StreamFailures)} {
		has(t, x, "AWS::SQS::QueuePolicy", map[string]any{
			"Queues": []any{ref(q)},
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Action": "sqs:*", "Effect": "Deny", "Principal": map[string]any{"AWS": "*"},
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
				"Resource":  getAtt(q, "Arn"),
			}}},
		})
	}
}

// TestAlarmStreamMapping: every property of the runs stream's mapping.
func TestAlarmStreamMapping(t *testing.T) {
	x := synth(t, devSettings())
	maps := x.ofType("AWS::Lambda::EventSourceMapping")
	if len(maps) != 1 {
		t.Fatalf("%d event source mappings", len(maps))
	}
	for _, m := range maps {
		equal(t, "runs stream mapping", m["Properties"], map[string]any{
			"EventSourceArn":                 getAtt(x.id(x.Data.Runs), "StreamArn"),
			"FunctionName":                   ref(x.id(x.Alarm.Function)),
			"StartingPosition":               "TRIM_HORIZON",
			"BatchSize":                      100,
			"MaximumBatchingWindowInSeconds": 2,
			"FunctionResponseTypes":          []any{"ReportBatchItemFailures"},
			"BisectBatchOnFunctionError":     true,
			"MaximumRetryAttempts":           10,
			"MaximumRecordAgeInSeconds":      21600,
			"ParallelizationFactor":          1,
			"DestinationConfig":              map[string]any{"OnFailure": map[string]any{"Destination": getAtt(x.id(x.Alarm.StreamFailures), "Arn")}},
		})
	}
}
