package stack

import (
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Events function settings, each with its reason (docs/api.md,
// "Watching a run"; docs/architecture.md).
const (
	// A function URL's invocation lasts at most 15 minutes; the handler
	// closes each stream before (STREAM_MAX, 14 min by default, and 5 s
	// before the deadline), and the client resumes with Last-Event-ID.
	runEventsTimeoutSeconds = 900
)

// RunEvents is the events function and its URL: GET
// /v1/runs/{runId}/events, streamed. API Gateway's HTTP API (the API's)
// cannot stream a response; a function URL in RESPONSE_STREAM mode can,
// with the JWT checked in the function against the API's issuer and
// audience (a REST API in STREAM mode would need a second API and a
// Lambda or Cognito authorizer for the same check).
type RunEvents struct {
	*function
	URL awslambda.FunctionUrl
}

func newRunEvents(scope constructs.Construct, s *Settings, d *Data) (*RunEvents, error) {
	c := constructs.NewConstruct(scope, jsii.String("RunEvents"))
	env := environment{
		"STATE_TABLE":  d.State.TableName(),
		"RUNS_TABLE":   d.Runs.TableName(),
		"JWT_ISSUER":   jsii.String(s.JWTIssuer),
		"JWT_AUDIENCE": jsii.String(strings.Join(s.JWTAudience, ",")),
		"STREAM_MAX":   jsii.String(""),
		// Each user's cap on open streams (the function's default when
		// the stage sets none).
		"STREAMS_PER_USER": jsii.String(streamsPerUser(s)),
	}
	owned := []string{"STATE_TABLE", "RUNS_TABLE", "JWT_ISSUER", "JWT_AUDIENCE", "STREAMS_PER_USER"}
	fn, err := newFunction(c, s, functionSpec{
		id:          EventsFunctionID,
		dir:         "events",
		description: "Commonly hosted runtime: a run's events as Server-Sent Events (function URL, RESPONSE_STREAM)",
		timeout:     awscdk.Duration_Seconds(jsii.Number(runEventsTimeoutSeconds)),
		env:         env,
		override:    func() error { return env.override(EventsFunctionID, s.Environment[EventsFunctionID], owned...) },
	})
	if err != nil {
		return nil, err
	}
	// AuthType NONE: Lambda checks no identity on a function URL but
	// IAM's; the function checks the caller's JWT (same issuer and
	// audience as the API's authorizer) before it reads anything.
	url := fn.Function.AddFunctionUrl(&awslambda.FunctionUrlOptions{
		AuthType:   awslambda.FunctionUrlAuthType_NONE,
		InvokeMode: awslambda.InvokeMode_RESPONSE_STREAM,
		Cors: &awslambda.FunctionUrlCorsOptions{
			AllowedOrigins: jsii.Strings(s.CORSOrigins...),
			AllowedMethods: &[]awslambda.HttpMethod{awslambda.HttpMethod_GET},
			AllowedHeaders: jsii.Strings("Authorization", "Last-Event-ID"),
			MaxAge:         awscdk.Duration_Hours(jsii.Number(1)),
		},
	})
	// It reads runs, and keeps each user's cap on open streams: its
	// slots' partitions (STREAMS#<userId>) only.
	grantTable(fn.Role, d.Runs, []string{"GetItem"})
	grantKeys(fn.Role, d.State, []string{"Query", "PutItem", "DeleteItem"}, streamKeys)
	awscdk.NewCfnOutput(scope, jsii.String("EventsUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The events function URL: GET {EventsUrl}v1/runs/{runId}/events"),
		Value:       url.Url(),
	})
	return &RunEvents{function: fn, URL: url}, nil
}

// streamsPerUser is the stage's STREAMS_PER_USER, "" for the default.
func streamsPerUser(s *Settings) string {
	if s.StreamsPerUser == 0 {
		return ""
	}
	return strconv.Itoa(s.StreamsPerUser)
}
