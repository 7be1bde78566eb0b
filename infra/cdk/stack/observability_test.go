package stack

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/reaper"
)

func TestAlarmsTellTheOpsTopic(t *testing.T) {
	x := synth(t, devSettings())
	topic := []any{ref(x.id(x.Events.OpsTopic))}
	lambdaMetric := func(fn, metric, stat string, period int) map[string]any {
		return map[string]any{
			"Namespace": "AWS/Lambda", "MetricName": metric, "Statistic": stat, "Period": period,
			"Dimensions": []any{map[string]any{"Name": "FunctionName", "Value": ref(fn)}},
		}
	}
	queueDepth := func(q string) map[string]any {
		return map[string]any{
			"Namespace": "AWS/SQS", "MetricName": "ApproximateNumberOfMessagesVisible", "Statistic": "Maximum", "Period": 300,
			"Dimensions": []any{map[string]any{"Name": "QueueName", "Value": getAtt(q, "QueueName")}},
		}
	}
	want := map[string]struct {
		metric    map[string]any
		threshold float64
		periods   int
	}{
		"TurnErrors":             {lambdaMetric(x.id(x.Turn.Function), "Errors", "Sum", 300), 1, 1},
		"AlarmErrors":            {lambdaMetric(x.id(x.Alarm.Function), "Errors", "Sum", 300), 1, 1},
		"ReaperFailures":         {lambdaMetric(x.id(x.Reaper.Function), "Errors", "Sum", 60), 1, 3},
		"StreamIteratorAge":      {lambdaMetric(x.id(x.Alarm.Function), "IteratorAge", "Maximum", 60), 120000, 5},
		"DispatchFailuresQueued": {queueDepth(x.id(x.Turn.DispatchFailures)), 1, 1},
		"StreamFailuresQueued":   {queueDepth(x.id(x.Alarm.StreamFailures)), 1, 1},
		"ReaperSourceFailures":   {sweepMetric(MetricSourceFailures), 1, 5},
		"ReaperKillFailures":     {sweepMetric(MetricSandboxKillFailures), 1, 5},
		"ReaperRunFailures":      {sweepMetric(MetricRunInterruptFailures), 1, 5},
		"ReaperScheduleFailures": {map[string]any{
			"Namespace": "AWS/Events", "MetricName": "FailedInvocations", "Statistic": "Sum", "Period": 300,
			"Dimensions": []any{map[string]any{"Name": "RuleName", "Value": ref(x.id(x.Reaper.Schedule))}},
		}, 1, 1},
	}
	if len(x.Observability.Alarms) != len(want) || len(x.ofType("AWS::CloudWatch::Alarm")) != len(want) {
		t.Fatalf("alarms: %v", sortedKeys(x.Observability.Alarms))
	}
	for id, w := range want {
		al, ok := x.Observability.Alarms[id]
		if !ok {
			t.Errorf("no alarm %s", id)
			continue
		}
		p := x.props(t, x.id(al))
		got := map[string]any{}
		for k, v := range p {
			if k != "AlarmDescription" {
				got[k] = v
			}
		}
		expected := map[string]any{
			"ComparisonOperator": "GreaterThanOrEqualToThreshold", "Threshold": w.threshold,
			"EvaluationPeriods": w.periods, "DatapointsToAlarm": w.periods, "TreatMissingData": "notBreaching",
			"AlarmActions": topic, "OKActions": topic,
		}
		for k, v := range w.metric {
			expected[k] = v
		}
		equal(t, "alarm "+id, got, expected)
		if d, _ := p["AlarmDescription"].(string); len(d) < 20 {
			t.Errorf("alarm %s says too little to whoever is paged: %q", id, d)
		}
	}
}

// sweepMetric is one of the reaper's per-sweep metrics, summed per
// minute (one sweep), without dimensions, as it emits them.
func sweepMetric(name string) map[string]any {
	return map[string]any{"Namespace": metrics.Namespace, "MetricName": name, "Statistic": "Sum", "Period": 60}
}

// The dashboard shows every metric the reaper emits: its Metric*
// constants, each of which its own test finds in a sweep's EMF event
// (shared/reaper's rig metrics), and no other.
func TestReaperMetricsAreTheOnesEmitted(t *testing.T) {
	emitted := []string{reaper.MetricSandboxesListed, reaper.MetricSandboxesExpired, reaper.MetricSandboxesKilled, reaper.MetricSandboxesAlreadyGone,
		reaper.MetricSandboxKillFailures, reaper.MetricSandboxesLeft, reaper.MetricSourceFailures, reaper.MetricRunsInterrupted, reaper.MetricRunsRefunded,
		reaper.MetricRunsRedispatched, reaper.MetricRunInterruptFailures, reaper.MetricSweepDuration}
	x := synth(t, devSettings())
	body := render(x.props(t, x.id(x.Observability.Dashboard))["DashboardBody"])
	for _, name := range emitted {
		if !strings.Contains(body, `MetricName=\"`+name+`\"`) {
			t.Errorf("the dashboard does not show %s", name)
		}
	}
}

func TestDashboard(t *testing.T) {
	x := synth(t, devSettings())
	body := render(x.props(t, x.id(x.Observability.Dashboard))["DashboardBody"])
	var parsed struct {
		Widgets []struct {
			Type       string `json:"type"`
			Properties struct {
				Title   string  `json:"title"`
				Metrics [][]any `json:"metrics"`
			} `json:"properties"`
		} `json:"widgets"`
	}
	// Tokens rendered as <…> sit inside JSON strings, so it still parses.
	if err := json.Unmarshal([]byte(body), &parsed); err != nil {
		t.Fatalf("dashboard body: %v\n%s", err, body)
	}
	titles := map[string]string{}
	for _, w := range parsed.Widgets {
		raw, _ := json.Marshal(w.Properties.Metrics)
		titles[w.Properties.Title] = string(raw)
	}
	search := func(metric, stat string, period int) string {
		return fmt.Sprintf(`SEARCH('Namespace=\"%s\" MetricName=\"%s\"', '%s', %d)`, metrics.Namespace, metric, stat, period)
	}
	for title, mustHave := range map[string][]string{
		"Turns by engine and status": {search(MetricTurns, "Sum", 300)},
		"Failures by errorKind":      {search(MetricTurnsFailed, "Sum", 300)},
		"Ceiling refusals":           {search(MetricCeilingRefusals, "Sum", 300)},
		"Cost per UTC day (USD)":     {"SUM(" + search(MetricTurnCost, "Sum", 86400) + ")/1000000"},
		"Sandboxes reaped, runs interrupted": {search(MetricSandboxesKilled, "Sum", 300), search(MetricSandboxesAlreadyGone, "Sum", 300),
			search(MetricRunsInterrupted, "Sum", 300), search(MetricRunsRefunded, "Sum", 300)},
		"Runs resumed after a worker stopped": {search(MetricResumptions, "Sum", 300), search(MetricTurnsLeft, "Sum", 300),
			search(MetricRunsRedispatched, "Sum", 300), search(MetricLostAttemptCost, "Sum", 300)},
		"Reaper: sandboxes listed and past their lifetime": {search(MetricSandboxesListed, "Maximum", 300), search(MetricSandboxesExpired, "Maximum", 300)},
		"Reaper: failures and work left": {search(MetricSourceFailures, "Sum", 300), search(MetricSandboxKillFailures, "Sum", 300),
			search(MetricRunInterruptFailures, "Sum", 300), search(MetricSandboxesLeft, "Sum", 300)},
		"Reaper: sweep duration (ms)":   {search(MetricSweepDuration, "Maximum", 300)},
		"Spend alarms raised":           {`"AWS/Events","TriggeredRules","EventBusName"`, x.id(x.Events.SpendAlarms)},
		"Runs stream iterator age (ms)": {`"AWS/Lambda","IteratorAge","FunctionName"`, x.id(x.Alarm.Function)},
		"Function errors":               {x.id(x.Turn.Function), x.id(x.Alarm.Function), x.id(x.Reaper.Function)},
		"Failure queues":                {x.id(x.Turn.DispatchFailures), x.id(x.Alarm.StreamFailures)},
	} {
		got, ok := titles[title]
		if !ok {
			t.Errorf("no widget %q (widgets: %v)", title, sortedKeys(titles))
			continue
		}
		for _, m := range mustHave {
			if !strings.Contains(got, m) {
				t.Errorf("widget %q lacks %s: %s", title, m, got)
			}
		}
	}
	alarmWidgets := 0
	for _, w := range parsed.Widgets {
		if w.Type == "metric" && len(w.Properties.Metrics) == 0 {
			alarmWidgets++
		}
	}
	if alarmWidgets != len(x.Observability.Alarms) {
		t.Errorf("%d alarm widgets, want one per alarm (%d)", alarmWidgets, len(x.Observability.Alarms))
	}
}
