package app

// Variables are the environment variables the alarm function reads,
// sorted. The CDK stack declares exactly these on AlarmFunction; whoever
// makes the function read another variable adds it here.
var Variables = []string{
	"DAILY_SPEND_ALARM_USD",
	"EVENT_BUS_NAME",
	"STATE_TABLE",
}
