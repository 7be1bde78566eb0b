package stack

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/commonly/runtime/shared/metrics"
	"github.com/commonly/runtime/shared/reaper"
	"github.com/commonly/runtime/shared/turns"
)

// Metrics the dashboard reads from the runtime's namespace
// (metrics.Namespace), by name. The functions emit them as EMF; the
// dashboard searches each by name over whatever dimensions it has, so a
// dimension added later shows up without a change here.
const (
	MetricTurns           = turns.MetricTurns           // by Engine and Status (turns.Worker)
	MetricTurnsFailed     = turns.MetricTurnsFailed     // by ErrorKind (turns.Worker)
	MetricCeilingRefusals = turns.MetricCeilingRefusals // by Plan (turns.Service)
	MetricTurnCost        = turns.MetricTurnCost        // by Engine and Status (turns.Worker)
	MetricResumptions     = turns.MetricResumptions     // by Engine (turns.Worker)
	MetricTurnsLeft       = turns.MetricTurnsLeft       // by Engine (turns.Worker)
	MetricLostAttemptCost = turns.MetricLostAttemptCost // by Engine (turns.Worker)
	// The reaper's, one EMF event per sweep without dimensions
	// (shared/reaper, report.go).
	MetricSandboxesListed      = reaper.MetricSandboxesListed
	MetricSandboxesExpired     = reaper.MetricSandboxesExpired
	MetricSandboxesKilled      = reaper.MetricSandboxesKilled
	MetricSandboxesAlreadyGone = reaper.MetricSandboxesAlreadyGone
	MetricSandboxKillFailures  = reaper.MetricSandboxKillFailures
	MetricSandboxesLeft        = reaper.MetricSandboxesLeft
	MetricSourceFailures       = reaper.MetricSourceFailures
	MetricRunsInterrupted      = reaper.MetricRunsInterrupted
	MetricRunsRedispatched     = reaper.MetricRunsRedispatched
	MetricRunsRefunded         = reaper.MetricRunsRefunded
	MetricRunInterruptFailures = reaper.MetricRunInterruptFailures
	MetricSweepDuration        = reaper.MetricSweepDuration
)

// Alarm thresholds, each with its reason.
const (
	// Any crash or timeout of the alarm function is a stream batch not
	// processed; a turn function error is a dispatch that Lambda retries.
	errorsThreshold = 1
	// The spend alarm and the usage's cost trail the runs by the
	// iterator's age: two minutes behind for five minutes is a stuck or
	// throttled consumer.
	iteratorAgeThresholdMs = 120_000
	iteratorAgePeriods     = 5
	// The reaper runs each minute; three failed sweeps in a row (the
	// function fails only when neither source could be read) is an
	// outage, not a blip.
	reaperFailedSweeps = 3
	// A source (E2B's list, the live index, the open runs), a kill or the
	// closing of a run failing in five sweeps in a row is no blip: the
	// sweep goes on without it, so sandboxes or runs may be left behind
	// while the function itself succeeds.
	reaperDegradedSweeps = 5
)

// Observability is the dashboard and the alarms, which tell the ops topic.
type Observability struct {
	Dashboard awscloudwatch.Dashboard
	Alarms    map[string]awscloudwatch.Alarm
}

func newObservability(scope constructs.Construct, s *Settings, ev *Events, t *Turn, a *Alarm, r *Reaper) *Observability {
	c := constructs.NewConstruct(scope, jsii.String("Observability"))
	o := &Observability{Alarms: newAlarms(c, ev, t, a, r)}
	o.Dashboard = newDashboard(c, ev, t, a, r, o.Alarms)
	return o
}

// Periods of the alarms and the graphs (functions: a jsii call must not
// run at package initialisation).
func fiveMinutes() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(5)) }
func oneMinute() awscdk.Duration   { return awscdk.Duration_Minutes(jsii.Number(1)) }
func oneDay() awscdk.Duration      { return awscdk.Duration_Days(jsii.Number(1)) }

var sum = jsii.String("Sum")

// alarmIDs are the alarms, in the dashboard's order.
var alarmIDs = []string{"TurnErrors", "AlarmErrors", "ReaperFailures", "ReaperScheduleFailures", "DispatchFailuresQueued", "StreamFailuresQueued", "StreamIteratorAge",
	"ReaperSourceFailures", "ReaperKillFailures", "ReaperRunFailures"}

// functionErrors is a function's errors summed over period.
func functionErrors(fn awslambda.Function, period awscdk.Duration) awscloudwatch.Metric {
	return fn.MetricErrors(&awscloudwatch.MetricOptions{Period: period, Statistic: sum})
}

// queueDepth is a queue's visible messages, the most in five minutes.
func queueDepth(q awssqs.Queue) awscloudwatch.Metric {
	return q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: fiveMinutes(), Statistic: jsii.String("Maximum")})
}

// iteratorAge is how far the alarm function is behind the runs stream.
func iteratorAge(a *Alarm) awscloudwatch.Metric {
	return a.Function.Metric(jsii.String("IteratorAge"), &awscloudwatch.MetricOptions{Period: oneMinute(), Statistic: jsii.String("Maximum")})
}

// reaperMetric is one of the reaper's sweep metrics, summed by the minute.
func reaperMetric(name string) awscloudwatch.Metric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String(metrics.Namespace), MetricName: jsii.String(name), Period: oneMinute(), Statistic: sum})
}

// newAlarms makes each alarm (alarmIDs), telling the ops topic when it
// fires and when it clears.
func newAlarms(c constructs.Construct, ev *Events, t *Turn, a *Alarm, r *Reaper) map[string]awscloudwatch.Alarm {
	alarms := map[string]awscloudwatch.Alarm{}
	action := awscloudwatchactions.NewSnsAction(ev.OpsTopic)
	alarm := func(id, description string, m awscloudwatch.IMetric, threshold, periods float64) {
		al := awscloudwatch.NewAlarm(c, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             m,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(periods),
			DatapointsToAlarm:  jsii.Number(periods),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			// No data is no failure (an idle function, an empty queue).
			TreatMissingData: awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		al.AddAlarmAction(action)
		al.AddOkAction(action)
		alarms[id] = al
	}
	scheduleFailures := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/Events"), MetricName: jsii.String("FailedInvocations"),
		DimensionsMap: &map[string]*string{"RuleName": r.Schedule.RuleName()}, Period: fiveMinutes(), Statistic: sum,
	})

	alarm("TurnErrors", "The turn function failed (a crash or a timeout; an async dispatch is retried).", functionErrors(t.Function, fiveMinutes()), errorsThreshold, 1)
	alarm("AlarmErrors", "The alarm function failed a stream batch (it is retried, then its range goes to the stream failure queue).", functionErrors(a.Function, fiveMinutes()), errorsThreshold, 1)
	alarm("ReaperFailures", fmt.Sprintf("The reaper failed %d sweeps in a row: neither E2B nor the state table could be read.", reaperFailedSweeps), functionErrors(r.Function, oneMinute()), errorsThreshold, reaperFailedSweeps)
	alarm("ReaperScheduleFailures", "EventBridge could not invoke the reaper.", scheduleFailures, 1, 1)
	alarm("DispatchFailuresQueued", "Turn dispatches that Lambda gave up on are in the dispatch failure queue: their runs were not run.", queueDepth(t.DispatchFailures), 1, 1)
	alarm("StreamFailuresQueued", "Runs-stream batches that the alarm function gave up on are in the stream failure queue: their costs are not counted.", queueDepth(a.StreamFailures), 1, 1)
	alarm("StreamIteratorAge", "The alarm function is behind the runs stream: spend alarms and the day's cost are late.", iteratorAge(a), iteratorAgeThresholdMs, iteratorAgePeriods)
	alarm("ReaperSourceFailures", fmt.Sprintf("A source of the reaper (E2B's list, the state table's live index or the open runs) failed in %d sweeps in a row: what only it shows is not reaped (the log line 'reaper source failed' names it).", reaperDegradedSweeps), reaperMetric(MetricSourceFailures), 1, reaperDegradedSweeps)
	alarm("ReaperKillFailures", fmt.Sprintf("The reaper failed to kill sandboxes past their lifetime in %d sweeps in a row: they keep running and billing ('sandbox kill failed' lines name them).", reaperDegradedSweeps), reaperMetric(MetricSandboxKillFailures), 1, reaperDegradedSweeps)
	alarm("ReaperRunFailures", fmt.Sprintf("The reaper failed to close abandoned runs in %d sweeps in a row: they stay open, unrefunded ('abandoned run not closed' lines name them).", reaperDegradedSweeps), reaperMetric(MetricRunInterruptFailures), 1, reaperDegradedSweeps)
	return alarms
}

// newDashboard lays out the runtime's graphs, then a widget per alarm.
func newDashboard(c constructs.Construct, ev *Events, t *Turn, a *Alarm, r *Reaper, alarms map[string]awscloudwatch.Alarm) awscloudwatch.Dashboard {
	search := func(label, metric, stat string, period awscdk.Duration) awscloudwatch.IMetric {
		return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Label:        jsii.String(label),
			Expression:   jsii.String(searchExpr(metric, stat, period)),
			UsingMetrics: &map[string]awscloudwatch.IMetric{},
			Period:       period,
		})
	}
	graph := func(title string, metrics ...awscloudwatch.IMetric) awscloudwatch.IWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Left: &metrics, Width: jsii.Number(8), Height: jsii.Number(6),
		})
	}
	costUSD := awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Label:        jsii.String("cost USD per UTC day"),
		Expression:   jsii.String(fmt.Sprintf("SUM(%s)/1000000", searchExpr(MetricTurnCost, "Sum", oneDay()))),
		UsingMetrics: &map[string]awscloudwatch.IMetric{},
		Period:       oneDay(),
	})
	alarmsRaised := awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String("AWS/Events"), MetricName: jsii.String("TriggeredRules"), Label: jsii.String("spend alarms raised"),
		DimensionsMap: &map[string]*string{"EventBusName": ev.Bus.EventBusName(), "RuleName": ev.SpendAlarms.RuleName()},
		Period:        fiveMinutes(), Statistic: sum,
	})
	var alarmWidgets []awscloudwatch.IWidget
	for _, id := range alarmIDs {
		alarmWidgets = append(alarmWidgets, awscloudwatch.NewAlarmWidget(&awscloudwatch.AlarmWidgetProps{
			Title: jsii.String(id), Alarm: alarms[id], Width: jsii.Number(6), Height: jsii.Number(4),
		}))
	}
	five := fiveMinutes()
	return awscloudwatch.NewDashboard(c, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: oneDay(),
		Widgets: &[]*[]awscloudwatch.IWidget{
			{
				graph("Turns by engine and status", search("turns", MetricTurns, "Sum", five)),
				graph("Failures by errorKind", search("failed turns", MetricTurnsFailed, "Sum", five)),
				graph("Ceiling refusals", search("refused at ceiling", MetricCeilingRefusals, "Sum", five)),
			},
			{
				graph("Cost per UTC day (USD)", costUSD),
				graph("Sandboxes reaped, runs interrupted",
					search("sandboxes killed", MetricSandboxesKilled, "Sum", five), search("sandboxes already gone", MetricSandboxesAlreadyGone, "Sum", five),
					search("runs interrupted", MetricRunsInterrupted, "Sum", five), search("runs refunded", MetricRunsRefunded, "Sum", five)),
				graph("Runs resumed after a worker stopped",
					search("turns resumed", MetricResumptions, "Sum", five), search("turns left for another attempt", MetricTurnsLeft, "Sum", five),
					search("runs re-dispatched by the reaper", MetricRunsRedispatched, "Sum", five),
					search("lost attempts' cost (micro-USD)", MetricLostAttemptCost, "Sum", five)),
				graph("Spend alarms raised", alarmsRaised),
			},
			{
				graph("Runs stream iterator age (ms)", iteratorAge(a)),
				graph("Function errors", functionErrors(t.Function, five), functionErrors(a.Function, five), functionErrors(r.Function, five)),
				graph("Failure queues", queueDepth(t.DispatchFailures), queueDepth(a.StreamFailures)),
			},
			{
				graph("Reaper: sandboxes listed and past their lifetime",
					search("listed", MetricSandboxesListed, "Maximum", five), search("expired", MetricSandboxesExpired, "Maximum", five)),
				graph("Reaper: failures and work left",
					search("source failures", MetricSourceFailures, "Sum", five), search("kill failures", MetricSandboxKillFailures, "Sum", five),
					search("run close failures", MetricRunInterruptFailures, "Sum", five), search("sandboxes left", MetricSandboxesLeft, "Sum", five)),
				graph("Reaper: sweep duration (ms)", search("sweep", MetricSweepDuration, "Maximum", five)),
			},
			&alarmWidgets,
		},
	})
}

// searchExpr finds a metric of the runtime's namespace by name, over every
// combination of its dimensions (one line each).
func searchExpr(metric, stat string, period awscdk.Duration) string {
	return fmt.Sprintf(`SEARCH('Namespace="%s" MetricName="%s"', '%s', %d)`, metrics.Namespace, metric, stat, int(*period.ToSeconds(nil)))
}
