package scale

import (
	"fmt"
	"math"
)

// Design is one way to run the worker or the watcher, and what it costs
// a turn (every turn's share, as the main table's parts are).
type Design struct {
	Name string
	USD  float64
	// Delay is what the watcher adds to a chunk's way to the client,
	// after the worker's 250 ms flush (watchers only).
	Delay string
	// Note says what the figure holds.
	Note string
}

// price is a unit price of the inputs.
func (m Model) price(k string) float64 { return m.In.Prices[k].USD }

// streams is the streams a turn has: the share of turns watched times
// their watchers.
func (m Model) streams() float64 { return m.In.Watch.WatchedShare * m.In.Watch.WatchersPerTurn }

// WatcherDesigns are the ways to get a turn's events to its watchers, a
// turn's cost each.
func (m Model) WatcherDesigns() []Design {
	d := m.In.Designs
	turnMB := m.MemoryMB["TurnFunction"]
	eventsMB := m.MemoryMB["EventsFunction"]
	today := m.watcher(eventsMB, turnMB)
	// Polling half as often halves the reads, and the execution stays.
	slower := today.Total() - today.Reads/2
	streams := m.streams()
	minutes := today.StreamSeconds / 60
	events := today.Events
	wall := m.workerSeconds(turnMB) + m.apiSeconds()

	// Today's stream served from a fleet that holds many streams in one
	// process (the worker's, or one of its own): only the polls' CPU and
	// the reads are paid.
	sharedCPU := today.Polls * m.Watched.CPUMillisPerPoll() / 1000 / d.CPUUtilisation * d.Headroom * m.lmiVCPUSecond()
	shared := sharedCPU + today.Reads + today.Slots + today.Logs
	sharedSlower := sharedCPU/2 + today.Reads/2 + today.Slots + today.Logs

	// Push: the worker sends each event once to the service, which sends
	// it to each watcher. AppSync Events counts the publish (made whether
	// anyone watches or not: the worker cannot tell) and each delivery
	// (5 KB each); an API Gateway WebSocket API counts the message sent
	// to each connection (32 KB each), and needs a Lambda authorizer to
	// check the JWT (it has no JWT authorizer) and an item a connection
	// (put on $connect, deleted on $disconnect), which the worker reads
	// once a turn.
	appSyncOps := events*(1+streams) + streams*d.AppSyncOpsPerConnection
	appSync := appSyncOps*m.price("appSyncEventOperation") + streams*minutes*m.price("appSyncConnectionMinute")
	authorizer := d.WebSocketAuthorizerMB / 1024 * d.WebSocketAuthorizerMillis / 1000 * m.price("lambdaGBSecond")
	ws := func(messages float64) float64 {
		return streams*(messages+d.WebSocketMessagesPerConn)*m.price("webSocketMessage") + streams*minutes*m.price("webSocketConnectionMinute") +
			streams*(authorizer+m.price("lambdaRequest")+d.WebSocketWriteUnits*m.price("ddbWriteUnit")) + m.price("ddbReadUnit")
	}
	// At most a message a second: the events of a second sent together.
	batched := math.Min(events, wall)
	poll := fmt.Sprintf("%.0f ms on average (half a poll), a read, the events' encoding", 1000*pollSeconds/2)
	return []Design{
		{"function URL, today (" + mb(eventsMB) + ")", today.Total(), poll, "an execution environment a stream for the turn's wall; a strongly consistent read of the run item every 250 ms"},
		{"function URL, polling every 500 ms", slower, fmt.Sprintf("%.0f ms on average, a read, the events' encoding", 1000*pollSeconds), "the same, half the reads"},
		{"the same stream from a shared fleet (Managed Instances, or Fargate behind a load balancer)", shared, poll,
			"the polls' CPU on a shared instance, and the same reads; response streaming on Managed Instances is not documented"},
		{"the same from a shared fleet, polling every 500 ms", sharedSlower, fmt.Sprintf("%.0f ms on average, a read, the events' encoding", 1000*pollSeconds),
			"half the polls' CPU and reads"},
		{"AppSync Events, a message an event", appSync, "the service's delivery (AWS publishes no figure)",
			fmt.Sprintf("%.0f events: a publish and a delivery each; a connect and a subscribe; connection minutes; no reads", events)},
		{"API Gateway WebSocket API, a message an event", ws(events), "the service's delivery (AWS publishes no figure)",
			fmt.Sprintf("%.0f messages; connection minutes; a Lambda authorizer and a connection item a watcher; no polling", events)},
		{"API Gateway WebSocket API, a message a second", ws(batched), "500 ms on average more",
			fmt.Sprintf("%.0f messages, a second's events each; the rest as above", batched)},
	}
}

// lmiVCPUSecond is a vCPU-second of the Managed Instances' instance, its
// management fee and its public IPv4 address included.
func (m Model) lmiVCPUSecond() float64 {
	d := m.In.Designs
	return (m.price("lmiInstanceHour")*(1+m.price("lmiManagementFee")) + m.price("publicIPv4Hour")) / d.LMIInstanceVCPU / 3600
}

// WorkerDesigns are the ways to run a turn's worker, a turn's cost each:
// the turn function's invocations (its API requests stay on Lambda in
// every design).
func (m Model) WorkerDesigns() []Design {
	d := m.In.Designs
	turnMB := m.MemoryMB["TurnFunction"]
	api := turnMB/1024*m.apiSeconds()*m.price("lambdaGBSecond") + m.In.Turn.APIRequestsPerTurn*m.price("lambdaRequest")
	wall := m.workerSeconds(turnMB)
	// A shared process holds a turn in memory for its wall and spends its
	// CPU; an instance or task of vcpu and gb holds as many turns a second
	// as the scarcer of the two allows at the utilisation aimed for, and
	// the fleet keeps Headroom over the hour's load. Its calls to the
	// model, E2B and the pod leave through a public IPv4 address an
	// instance (DynamoDB and SQS through gateway and interface endpoints).
	perTurn := func(hourUSD, vcpu, gb float64) float64 {
		byCPU := vcpu * d.CPUUtilisation / (d.TurnCPUMillis / 1000)
		byMemory := gb * 1024 * d.CPUUtilisation / (d.TurnMemoryMB * wall)
		return (hourUSD + m.price("publicIPv4Hour")) / 3600 / math.Min(byCPU, byMemory) * d.Headroom
	}
	// Through a NAT gateway instead, every byte is processed.
	nat := d.EgressKBPerTurn / 1e6 * m.price("natGatewayGB")
	lmi := api + perTurn(m.price("lmiInstanceHour")*(1+m.price("lmiManagementFee")), d.LMIInstanceVCPU, d.LMIInstanceGB) + m.price("lambdaRequest")
	fargateHour := d.FargateTaskVCPU*m.price("fargateVCPUHour") + d.FargateTaskGB*m.price("fargateGBHour")
	fargate := api + perTurn(fargateHour, d.FargateTaskVCPU, d.FargateTaskGB) + d.SQSRequestsPerTurn*m.price("sqsRequest")
	return []Design{
		{Name: "Lambda, a turn an environment (today, " + mb(turnMB) + ")", USD: m.turnLambda(turnMB), Note: "the API's requests and the worker, billed for the turn's wall"},
		{Name: "Lambda at 128 MB", USD: m.turnLambda(128), Note: "the same at Lambda's smallest size, which adds more than 1 % to the p95 of the turns with the most context (make memsize)"},
		{Name: "Lambda Managed Instances (" + d.LMIInstance + ")", USD: lmi, Note: "the API on Lambda; the worker on shared instances: the instance, its 15 % fee and a public IPv4 address, a request"},
		{Name: "Lambda Managed Instances, egress through a NAT gateway", USD: lmi + nat, Note: fmt.Sprintf("the same, and %.0f KB a turn processed by the NAT gateway", d.EgressKBPerTurn)},
		{Name: "ECS on Fargate behind SQS", USD: fargate, Note: "the API on Lambda, which enqueues; tasks of " + trim(d.FargateTaskVCPU) + " vCPU and " + trim(d.FargateTaskGB) + " GB with a public IPv4 address, SQS's requests"},
	}
}

// base is what every design pays a turn besides the worker and the
// watcher: DynamoDB, EventBridge, logs, and the alarm's and the
// reaper's Lambda.
func (f Figures) base(m Model) float64 {
	return f.Cost["Lambda"] - m.turnLambda(m.MemoryMB["TurnFunction"]) + f.Cost["DynamoDB"] + f.Cost["EventBridge"] + f.Cost["CloudWatch"]
}

func mb(v float64) string { return trim(v) + " MB" }
