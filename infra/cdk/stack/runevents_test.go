package stack

import "testing"

// The events function is reached through its URL only: streamed
// (RESPONSE_STREAM, which API Gateway's HTTP API cannot do), no IAM auth
// (the function checks the API's JWT itself), GET from the API's CORS
// origins with Authorization and Last-Event-ID; its issuer and audience
// are the API authorizer's; the URL is an output.
func TestEventsFunctionURL(t *testing.T) {
	x := synth(t, devSettings())
	urls := x.ofType("AWS::Lambda::Url")
	if len(urls) != 1 {
		t.Fatalf("%d function URLs, want 1", len(urls))
	}
	for _, u := range urls {
		p := u["Properties"].(map[string]any)
		equal(t, "url target", p["TargetFunctionArn"], getAtt(x.id(x.RunEvents.Function), "Arn"))
		equal(t, "invoke mode and auth", []any{p["InvokeMode"], p["AuthType"]}, []any{"RESPONSE_STREAM", "NONE"})
		equal(t, "cors", p["Cors"], map[string]any{
			"AllowOrigins": []any{"https://dev.commonly.dev"}, "AllowMethods": []any{"GET"},
			"AllowHeaders": []any{"Authorization", "Last-Event-ID"}, "MaxAge": 3600.0,
		})
	}
	// Public invocation through the URL only: since October 2025 a URL
	// needs both lambda:InvokeFunctionUrl and lambda:InvokeFunction
	// (the latter only via the URL).
	got := map[string]bool{}
	for _, perm := range x.ofType("AWS::Lambda::Permission") {
		p := perm["Properties"].(map[string]any)
		if !equalJSON(p["FunctionName"], getAtt(x.id(x.RunEvents.Function), "Arn")) {
			continue
		}
		switch {
		case p["Action"] == "lambda:InvokeFunctionUrl" && p["FunctionUrlAuthType"] == "NONE" && p["Principal"] == "*":
			got["url"] = true
		case p["Action"] == "lambda:InvokeFunction" && p["InvokedViaFunctionUrl"] == true && p["Principal"] == "*":
			got["via url"] = true
		default:
			t.Errorf("events function permission %v", p)
		}
	}
	if !got["url"] || !got["via url"] {
		t.Errorf("function URL permissions %v", got)
	}
	api := x.ofType("AWS::ApiGatewayV2::Authorizer")
	for _, a := range api {
		cfg := a["Properties"].(map[string]any)["JwtConfiguration"].(map[string]any)
		vars := x.props(t, x.id(x.RunEvents.Function))["Environment"].(map[string]any)["Variables"].(map[string]any)
		equal(t, "issuer as the API's", vars["JWT_ISSUER"], cfg["Issuer"])
		equal(t, "audience as the API's", []any{vars["JWT_AUDIENCE"]}, cfg["Audience"])
	}
	if len(api) != 1 {
		t.Errorf("%d API authorizers", len(api))
	}
	if _, ok := x.json["Outputs"].(map[string]any)["EventsUrl"]; !ok {
		t.Error("no EventsUrl output")
	}
}
