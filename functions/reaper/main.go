// Command reaper is the scheduled function that kills sandboxes past their
// three-minute lifetime. Its behaviour is the subject of its own issue;
// until then it reports that it has nothing wired and exits cleanly, so
// the schedule can be deployed without side effects.
package main

import (
	"context"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

func main() {
	log := lambdacontext.NewLogger()
	lambda.Start(func(ctx context.Context, ev events.EventBridgeEvent) error {
		log.InfoContext(ctx, "reaper not wired yet: no sandboxes examined", "scheduledAt", ev.Time)
		return nil
	})
}
