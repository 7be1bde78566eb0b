package stack

import (
	"encoding/json"
	"slices"
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
	for _, svc := range []string{"events.amazonaws.com", "cloudwatch.amazonaws.com"} {
		if !keyAllows(keyProps["KeyPolicy"], svc, "kms:Decrypt", "kms:GenerateDataKey*") {
			raw, _ := json.Marshal(keyProps["KeyPolicy"])
			t.Errorf("the key policy does not let %s use the key: %s", svc, raw)
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

// keyAllows reports whether a key policy has a statement allowing the
// service every action, whether the CDK wrote the service alone or merged
// it with others (@aws-cdk/aws-iam:minimizePolicies).
func keyAllows(policy any, service string, actions ...string) bool {
	doc, _ := policy.(map[string]any)
	stmts, _ := doc["Statement"].([]any)
	list := func(v any) []string {
		switch v := v.(type) {
		case string:
			return []string{v}
		case []any:
			var out []string
			for _, e := range v {
				if s, ok := e.(string); ok {
					out = append(out, s)
				}
			}
			return out
		}
		return nil
	}
	for _, s := range stmts {
		st, _ := s.(map[string]any)
		principal, _ := st["Principal"].(map[string]any)
		if st["Effect"] != "Allow" || !slices.Contains(list(principal["Service"]), service) {
			continue
		}
		got := list(st["Action"])
		if !slices.ContainsFunc(actions, func(a string) bool { return !slices.Contains(got, a) }) {
			return true
		}
	}
	return false
}
