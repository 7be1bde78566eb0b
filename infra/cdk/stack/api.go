package stack

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2authorizers"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/commonly/runtime/functions/turn/handler"
)

// CORS of the API: the frontend's origins (from the stage), the methods of
// its routes, and the headers the API reads and returns.
var (
	corsAllowHeaders  = []string{"authorization", "content-type", "idempotency-key", "prefer"}
	corsExposeHeaders = []string{"location", "retry-after", "idempotent-replayed"}
)

// corsMaxAgeSeconds lets a browser reuse a preflight for an hour.
const corsMaxAgeSeconds = 3600

// accessLogFormat is one JSON line per request: who (the authorizer's
// subject, never the token), what, how it ended, and the errors API
// Gateway itself produced.
var accessLogFormat = map[string]string{
	"requestId":          "$context.requestId",
	"requestTime":        "$context.requestTime",
	"ip":                 "$context.identity.sourceIp",
	"routeKey":           "$context.routeKey",
	"status":             "$context.status",
	"protocol":           "$context.protocol",
	"responseLength":     "$context.responseLength",
	"latencyMs":          "$context.responseLatency",
	"integrationLatency": "$context.integrationLatency",
	"integrationStatus":  "$context.integrationStatus",
	"integrationError":   "$context.integrationErrorMessage",
	"authorizerError":    "$context.authorizer.error",
	"sub":                "$context.authorizer.claims.sub",
}

// API is the HTTP API in front of the turn function.
type API struct {
	Api        awsapigatewayv2.HttpApi
	AccessLogs awslogs.LogGroup
}

func newAPI(scope constructs.Construct, s *Settings, turn *Turn) (*API, error) {
	c := constructs.NewConstruct(scope, jsii.String("Api"))
	methods := map[string]bool{}
	for _, r := range handler.Routes {
		m, _, _ := strings.Cut(r, " ")
		methods[m] = true
	}
	var corsMethods []awsapigatewayv2.CorsHttpMethod
	for _, m := range []string{"GET", "POST", "PUT", "PATCH", "DELETE"} {
		if methods[m] {
			corsMethods = append(corsMethods, awsapigatewayv2.CorsHttpMethod(m))
		}
	}
	api := awsapigatewayv2.NewHttpApi(c, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		Description: jsii.String("Commonly hosted turns (" + s.Stage + ")"),
		CorsPreflight: &awsapigatewayv2.CorsPreflightOptions{
			AllowOrigins:  jsii.Strings(s.CORSOrigins...),
			AllowMethods:  &corsMethods,
			AllowHeaders:  jsii.Strings(corsAllowHeaders...),
			ExposeHeaders: jsii.Strings(corsExposeHeaders...),
			MaxAge:        awscdk.Duration_Seconds(jsii.Number(corsMaxAgeSeconds)),
		},
		CreateDefaultStage: jsii.Bool(true),
	})
	// Identity comes only from this authorizer's claims (the handler reads
	// sub and scope from them).
	auth := awsapigatewayv2authorizers.NewHttpJwtAuthorizer(jsii.String("Jwt"), jsii.String(s.JWTIssuer), &awsapigatewayv2authorizers.HttpJwtAuthorizerProps{
		JwtAudience: jsii.Strings(s.JWTAudience...),
	})
	integration := awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Turn"), turn.Function, &awsapigatewayv2integrations.HttpLambdaIntegrationProps{
		PayloadFormatVersion: awsapigatewayv2.PayloadFormatVersion_VERSION_2_0(),
	})
	// Exactly the handler's routes, so the two cannot drift: the service
	// routes require the service scope, the public ones no identity.
	for _, r := range handler.Routes {
		method, path, ok := strings.Cut(r, " ")
		if !ok {
			return nil, fmt.Errorf("route %q is not METHOD PATH", r)
		}
		opts := &awsapigatewayv2.AddRoutesOptions{
			Path:        jsii.String(path),
			Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod(method)},
			Integration: integration,
			Authorizer:  auth,
		}
		if slices.Contains(handler.ServiceRoutes, r) {
			opts.AuthorizationScopes = jsii.Strings(handler.ServiceScope)
		}
		if slices.Contains(handler.PublicRoutes, r) {
			opts.Authorizer = awsapigatewayv2.NewHttpNoneAuthorizer()
		}
		for _, route := range *api.AddRoutes(opts) {
			if opts.AuthorizationScopes == nil && slices.Contains(handler.PublicRoutes, r) {
				cdknag.NagSuppressions_AddResourceSuppressions(route, &[]*cdknag.NagPackSuppression{{
					Id:     jsii.String("AwsSolutions-APIG4"),
					Reason: jsii.String("A public route of the handler (handler.PublicRoutes: the API's OpenAPI document), which carries no user data; the handler serves it to anyone, so API Gateway asks for no token."),
				}}, nil)
			}
		}
	}
	logs := newLogGroup(c, "AccessLogs", s)
	stage := api.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(jsonFormat(accessLogFormat)),
	})
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit:  jsii.Number(s.ThrottleRate),
		ThrottlingBurstLimit: jsii.Number(s.ThrottleBurst),
	})
	awscdk.NewCfnOutput(scope, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{
		Description: jsii.String("The turn API's base URL"),
		Value:       api.ApiEndpoint(),
	})
	return &API{Api: api, AccessLogs: logs}, nil
}

// jsonFormat renders an access-log format as one JSON object, keys sorted.
func jsonFormat(fields map[string]string) string {
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%q:%q", k, fields[k])
	}
	return "{" + strings.Join(parts, ",") + "}"
}
