package stack

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/commonly/runtime/functions/turn/handler"
)

// TestAPIRoutesAreTheHandlers: exactly the handler's routes, each behind
// the JWT authorizer, the service routes requiring the service scope.
func TestAPIRoutesAreTheHandlers(t *testing.T) {
	x := synth(t, devSettings())
	authorizers := x.ofType("AWS::ApiGatewayV2::Authorizer")
	integrations := x.ofType("AWS::ApiGatewayV2::Integration")
	if len(authorizers) != 1 || len(integrations) != 1 {
		t.Fatalf("%d authorizers, %d integrations", len(authorizers), len(integrations))
	}
	var authID, integrationID string
	for id, a := range authorizers {
		authID = id
		equal(t, "authorizer", a["Properties"], map[string]any{
			"ApiId": ref(x.id(x.API.Api)), "AuthorizerType": "JWT", "Name": "Jwt",
			"IdentitySource":   []any{"$request.header.Authorization"},
			"JwtConfiguration": map[string]any{"Audience": []any{"commonly-turns"}, "Issuer": "https://auth.commonly.dev"},
		})
	}
	for id, i := range integrations {
		integrationID = id
		equal(t, "integration", i["Properties"], map[string]any{
			"ApiId": ref(x.id(x.API.Api)), "IntegrationType": "AWS_PROXY", "PayloadFormatVersion": "2.0",
			"IntegrationUri": getAtt(x.id(x.Turn.Function), "Arn"),
		})
	}
	var keys []string
	for _, r := range x.ofType("AWS::ApiGatewayV2::Route") {
		p := r["Properties"].(map[string]any)
		key := p["RouteKey"].(string)
		keys = append(keys, key)
		want := map[string]any{
			"ApiId": ref(x.id(x.API.Api)), "RouteKey": key, "AuthorizationType": "JWT", "AuthorizerId": ref(authID),
			"Target": join("integrations/", ref(integrationID)),
		}
		if slices.Contains(handler.ServiceRoutes, key) {
			want["AuthorizationScopes"] = []any{handler.ServiceScope}
		}
		if slices.Contains(handler.PublicRoutes, key) {
			want = map[string]any{"ApiId": want["ApiId"], "RouteKey": key, "AuthorizationType": "NONE", "Target": want["Target"]}
		}
		equal(t, "route "+key, p, want)
	}
	slices.Sort(keys)
	routes := slices.Clone(handler.Routes)
	slices.Sort(routes)
	equal(t, "routes (stack vs handler.Routes)", keys, routes)
	if n := len(handler.ServiceRoutes); n == 0 || n == len(handler.Routes) {
		t.Errorf("%d of %d routes are service-only: the flags do not reach the stack", n, len(handler.Routes))
	}
	// API Gateway may invoke the turn function, from this API only.
	perms := 0
	for _, p := range x.ofType("AWS::Lambda::Permission") {
		props := p["Properties"].(map[string]any)
		if props["Principal"] != "apigateway.amazonaws.com" {
			continue
		}
		perms++
		equal(t, "permission function", props["FunctionName"], getAtt(x.id(x.Turn.Function), "Arn"))
		if src := render(props["SourceArn"]); !strings.Contains(src, "${"+x.id(x.API.Api)+"}") {
			t.Errorf("permission for another source: %s", src)
		}
	}
	if perms != len(handler.Routes) {
		t.Errorf("%d API Gateway permissions, want one per route", perms)
	}
}

func TestAPICORSAccessLogsThrottling(t *testing.T) {
	x := synth(t, devSettings())
	api := x.props(t, x.id(x.API.Api))
	equal(t, "api", api, map[string]any{
		"Name": "HttpApi", "Description": "Commonly hosted turns (dev)", "ProtocolType": "HTTP",
		"CorsConfiguration": map[string]any{
			"AllowOrigins":  []any{"https://dev.commonly.dev"},
			"AllowMethods":  []any{"GET", "POST", "PUT"},
			"AllowHeaders":  []any{"authorization", "content-type", "idempotency-key", "prefer"},
			"ExposeHeaders": []any{"location", "retry-after", "idempotent-replayed"},
			"MaxAge":        3600,
		},
	})
	stages := x.ofType("AWS::ApiGatewayV2::Stage")
	if len(stages) != 1 {
		t.Fatalf("%d stages", len(stages))
	}
	for _, st := range stages {
		p := st["Properties"].(map[string]any)
		als := p["AccessLogSettings"].(map[string]any)
		var format map[string]string
		if err := json.Unmarshal([]byte(als["Format"].(string)), &format); err != nil {
			t.Fatalf("access log format is not JSON: %v", err)
		}
		equal(t, "access log format", format, accessLogFormat)
		for _, must := range []string{"requestId", "status", "routeKey", "ip", "authorizerError", "integrationError"} {
			if format[must] == "" {
				t.Errorf("access logs lack %s", must)
			}
		}
		equal(t, "stage", p, map[string]any{
			"ApiId": ref(x.id(x.API.Api)), "StageName": "$default", "AutoDeploy": true,
			"AccessLogSettings":    map[string]any{"DestinationArn": getAtt(x.id(x.API.AccessLogs), "Arn"), "Format": als["Format"]},
			"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": 20, "ThrottlingBurstLimit": 40},
		})
	}
	equal(t, "access log retention", x.props(t, x.id(x.API.AccessLogs))["RetentionInDays"], 14)
	has(t, x, "AWS::ApiGatewayV2::Api", map[string]any{"ProtocolType": "HTTP"})
	if _, ok := x.json["Outputs"].(map[string]any)["ApiUrl"]; !ok {
		t.Error("no ApiUrl output")
	}
}
