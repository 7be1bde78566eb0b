package stack

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestSpendAlarmRuleToOpsTopic(t *testing.T) {
	x := synth(t, devSettings())
	bus := x.props(t, x.id(x.Events.Bus))
	if name, _ := bus["Name"].(string); name == "" {
		t.Errorf("bus without a name: %v", bus)
	}
	rule := x.props(t, x.id(x.Events.SpendAlarms))
	equal(t, "spend alarm rule", rule, map[string]any{
		"Description":  "Every spend alarm to the ops topic",
		"EventBusName": ref(x.id(x.Events.Bus)),
		"EventPattern": map[string]any{"source": []any{"commonly.hosted-runtime"}, "detail-type": []any{"SpendAlarmRaised"}},
		"State":        "ENABLED",
		"Targets":      []any{map[string]any{"Arn": ref(x.id(x.Events.OpsTopic)), "Id": "Target0"}},
	})
	topic := x.props(t, x.id(x.Events.OpsTopic))
	key := getAtt(topic["KmsMasterKeyId"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string), "Arn")
	equal(t, "topic key", topic["KmsMasterKeyId"], key)
	keyProps := x.props(t, key["Fn::GetAtt"].([]any)[0].(string))
	equal(t, "key rotation", keyProps["EnableKeyRotation"], true)
	raw, _ := json.Marshal(keyProps["KeyPolicy"])
	policy := string(raw)
	for _, svc := range []string{"events.amazonaws.com", "cloudwatch.amazonaws.com"} {
		if !strings.Contains(policy, `"Service":"`+svc+`"`) {
			t.Errorf("the key policy does not let %s use the key: %s", svc, policy)
		}
	}
	// EventBridge may publish to the topic; nobody may without TLS.
	has(t, x, "AWS::SNS::TopicPolicy", map[string]any{
		"Topics": []any{ref(x.id(x.Events.OpsTopic))},
		"PolicyDocument": map[string]any{"Statement": []any{
			map[string]any{
				"Action": "sns:Publish", "Effect": "Deny", "Principal": "*", "Resource": ref(x.id(x.Events.OpsTopic)),
				"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}}, "Sid": "AllowPublishThroughSSLOnly",
			},
			map[string]any{
				"Action": "sns:Publish", "Effect": "Allow", "Principal": map[string]any{"Service": "events.amazonaws.com"},
				"Resource": ref(x.id(x.Events.OpsTopic)), "Sid": "1",
			},
		}},
	})
}

func TestReaperSchedule(t *testing.T) {
	x := synth(t, devSettings())
	rule := x.props(t, x.id(x.Reaper.Schedule))
	equal(t, "reaper schedule", rule, map[string]any{
		"Description":        "The reaper's sweep",
		"ScheduleExpression": "rate(1 minute)",
		"State":              "ENABLED",
		"Targets": []any{map[string]any{
			"Arn": getAtt(x.id(x.Reaper.Function), "Arn"), "Id": "Target0",
			"RetryPolicy": map[string]any{"MaximumRetryAttempts": 0, "MaximumEventAgeInSeconds": 60},
		}},
	})
	has(t, x, "AWS::Lambda::Permission", map[string]any{
		"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
		"FunctionName": getAtt(x.id(x.Reaper.Function), "Arn"), "SourceArn": getAtt(x.id(x.Reaper.Schedule), "Arn"),
	})
}
