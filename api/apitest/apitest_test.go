package apitest_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api/apitest"
)

func ev(method, routeKey, rawPath string, params map[string]string, sub, scope, body string, headers map[string]string, query ...string) events.APIGatewayV2HTTPRequest {
	e := events.APIGatewayV2HTTPRequest{
		RouteKey: routeKey, RawPath: rawPath, PathParameters: params, Body: body, RawQueryString: strings.Join(query, "&"),
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: rawPath},
		},
	}
	for k, v := range headers {
		e.Headers[k] = v
	}
	if sub != "" {
		e.RequestContext.Authorizer = &events.APIGatewayV2HTTPRequestContextAuthorizerDescription{
			JWT: &events.APIGatewayV2HTTPRequestContextAuthorizerJWTDescription{Claims: map[string]string{"sub": sub, "scope": scope}},
		}
	}
	return e
}

func resp(status int, ct, body string, headers ...string) events.APIGatewayV2HTTPResponse {
	h := map[string]string{"Content-Type": ct}
	for i := 0; i+1 < len(headers); i += 2 {
		h[headers[i]] = headers[i+1]
	}
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: h, Body: body}
}

const (
	usageBody = `{"plan":"free","day":"2026-12-02","turnsUsed":1,"turnsLimit":30,"costUSD":0.000042,"costMicros":42,"resetsAt":"2026-12-03T00:00:00Z","spendAlarmRaised":false}`
	turnKey   = "POST /v1/installs/{installId}/turns"
	accepted  = `{"engine":"native","runId":"run_1","status":"queued"}`
	failedRun = `{"runId":"run_1","installId":"i","userId":"user-1","podId":"p","agentName":"a","instanceId":"i","engine":"native","trigger":"user","message":"hi","day":"2026-12-02",` +
		`"status":"failed","errorKind":"sandbox_error","errorMessage":"sandbox lost","createdAt":"2026-12-02T12:00:00Z","completedAt":"2026-12-02T12:00:01Z",` +
		`"steps":[],"tokens":{"prompt":0,"cachedPrompt":0,"completion":0,"total":0},"costMicros":0,"cost":{"modelMicros":0,"sandboxMicros":0,"searchMicros":0},"attempts":0,"refunded":true}`
)

var (
	usage    = ev("GET", "GET /v1/me/usage", "/v1/me/usage", nil, "user-1", "", "", nil)
	turn     = ev("POST", turnKey, "/v1/installs/inst-1/turns", map[string]string{"installId": "inst-1"}, "user-1", "", `{"message":"hi"}`, nil)
	badTurn  = ev("POST", turnKey, "/v1/installs/inst-1/turns", map[string]string{"installId": "inst-1"}, "user-1", "", `{"message":""}`, nil)
	trailing = ev("POST", turnKey, "/v1/installs/inst-1/turns", map[string]string{"installId": "inst-1"}, "user-1", "", `{"message":"hi"}}`, nil)
	getRun   = ev("GET", "GET /v1/runs/{runId}", "/v1/runs/run_1", map[string]string{"runId": "run_1"}, "user-1", "", "", nil)
	setPlan  = ev("PUT", "PUT /v1/users/{userId}/plan", "/v1/users/u/plan", map[string]string{"userId": "u"}, "user-1", "", `{"plan":"pro"}`, nil)
)

const (
	malformed = `{"type":"https://commonly.dev/problems/malformed_body","title":"Malformed request body","status":400,"detail":"x is not a known field","field":"x"}`
	invalid   = `{"type":"https://commonly.dev/problems/invalid_field","title":"A field of the request is invalid","status":400,"detail":"message is required","field":"message"}`
	forbidden = `{"type":"https://commonly.dev/problems/forbidden","title":"Not yours","status":403,"detail":"the caller may not act on this resource"}`
	noID      = `{"type":"https://commonly.dev/problems/unauthenticated","title":"No identity","status":401,"detail":"the request carries no authenticated identity"}`
	noRoute   = `{"type":"https://commonly.dev/problems/route_not_found","title":"No such route","status":404,"detail":"no route matches /v1/nothing"}`
)

// Each case is an exchange the contract must refuse, or accept; the
// document is the real one.
func TestValidateCatchesDriftBothWays(t *testing.T) {
	v, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	unknown := ev("GET", "$default", "/v1/nothing", nil, "user-1", "", "", nil)
	cases := []struct {
		name string
		req  events.APIGatewayV2HTTPRequest
		resp events.APIGatewayV2HTTPResponse
		want string // "" = valid; else a piece of the error
	}{
		{"valid usage", usage, resp(200, "application/json", usageBody), ""},
		{"a field the document lacks", usage, resp(200, "application/json", strings.Replace(usageBody, `"plan"`, `"spendLimitEUR":2,"plan"`, 1)), "spendLimitEUR"},
		{"a required field missing", usage, resp(200, "application/json", strings.Replace(usageBody, `"turnsLimit":30,`, "", 1)), "turnsLimit"},
		{"a value outside the enum", usage, resp(200, "application/json", strings.Replace(usageBody, `"free"`, `"gold"`, 1)), "plan"},
		{"an undocumented status", usage, resp(418, "application/json", `{}`), "status"},
		{"an undocumented problem type", usage, resp(503, "application/problem+json", `{"type":"https://commonly.dev/problems/budget_exhausted","title":"t","status":503,"detail":"d"}`, "Retry-After", "5"), "response"},
		{"a required header missing", usage, resp(503, "application/problem+json", `{"type":"https://commonly.dev/problems/unavailable","title":"t","status":503,"detail":"d"}`), "Retry-After"},
		{"an undocumented header", usage, resp(200, "application/json", usageBody, "X-Spend-Alarm", "true"), "X-Spend-Alarm"},
		{"a wrong content type", usage, resp(200, "text/plain", usageBody), "response"},
		{"a failed run", getRun, resp(200, "application/json", failedRun), ""},
		{"a failed run without errorKind", getRun, resp(200, "application/json", strings.Replace(failedRun, `"errorKind":"sandbox_error",`, "", 1)), "errorKind"},
		{"an unknown errorKind", getRun, resp(200, "application/json", strings.Replace(failedRun, `"sandbox_error"`, `"spend_cap"`, 1)), "errorKind"},
		{"a succeeded run with an errorKind", getRun, resp(200, "application/json", strings.Replace(failedRun, `"status":"failed"`, `"status":"succeeded"`, 1)), "response"},
		{"valid turn", turn, resp(202, "application/json", accepted, "Location", "/v1/runs/run_1"), ""},
		{"Location missing", turn, resp(202, "application/json", accepted), "Location"},
		{"an invalid request accepted", badTurn, resp(202, "application/json", accepted, "Location", "/v1/runs/run_1"), "calls the request invalid"},
		{"an invalid request refused", badTurn, resp(400, "application/problem+json", invalid), ""},
		{"a valid request refused as malformed", turn, resp(400, "application/problem+json", malformed), "looser than the code"},
		{"data after the body accepted", trailing, resp(202, "application/json", accepted, "Location", "/v1/runs/run_1"), "not one JSON text"},
		{"data after the body refused", trailing, resp(400, "application/problem+json", strings.Replace(malformed, `"x"`, `"body"`, 1)), ""},
		{"no identity served", ev("GET", "GET /v1/me/usage", "/v1/me/usage", nil, "", "", "", nil), resp(200, "application/json", usageBody), "no identity"},
		{"no identity refused", ev("GET", "GET /v1/me/usage", "/v1/me/usage", nil, "", "", "", nil), resp(401, "application/problem+json", noID), ""},
		{"an identity refused as unauthenticated", usage, resp(401, "application/problem+json", noID), "yet the answer is 401"},
		{"a user on a service route served", setPlan, resp(200, "application/json", `{"plan":"pro","userId":"u"}`), "scope"},
		{"a user on a service route refused", setPlan, resp(403, "application/problem+json", forbidden), ""},
		{"the service on a service route", ev("PUT", "PUT /v1/users/{userId}/plan", "/v1/users/u/plan", map[string]string{"userId": "u"}, "backend", "openid commonly/admin", `{"plan":"pro"}`, nil), resp(200, "application/json", `{"plan":"pro","userId":"u"}`), ""},
		{"an undocumented route", ev("DELETE", "DELETE /v1/me/usage", "/v1/me/usage", nil, "user-1", "", "", nil), resp(200, "application/json", `{}`), "not in the document"},
		{"an unknown path refused", unknown, resp(404, "application/problem+json", noRoute), ""},
		{"an unknown path served", unknown, resp(200, "application/json", `{}`), "must be 404"},
		{"an unknown method refused", ev("DELETE", "$default", "/v1/me/usage", nil, "user-1", "", "", nil),
			resp(405, "application/problem+json", `{"type":"https://commonly.dev/problems/method_not_allowed","title":"Method not allowed","status":405,"detail":"this path does not accept DELETE"}`), ""},
		{"an undocumented query parameter", ev("GET", "GET /v1/me/usage", "/v1/me/usage", nil, "user-1", "", "", nil, "day=2026-12-02"), resp(200, "application/json", usageBody), "day"},
		{"a $default event of a known route", ev("GET", "$default", "/v1/me/usage", nil, "user-1", "", "", nil), resp(200, "application/json", usageBody), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := v.Validate(c.req, c.resp)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && err == nil:
				t.Errorf("accepted, want an error about %q", c.want)
			case c.want != "" && !strings.Contains(err.Error(), c.want):
				t.Errorf("error %v, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestMissingListsWhatWasNotSeen(t *testing.T) {
	v, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	before := v.Missing()
	if !slices.Contains(before, "getUsage 200") || !slices.Contains(before, "problem turn_ceiling_reached") {
		t.Fatalf("missing = %v", before)
	}
	_ = v.Validate(usage, resp(200, "application/json", usageBody))
	if after := v.Missing(); slices.Contains(after, "getUsage 200") || len(after) != len(before)-1 {
		t.Errorf("after one usage exchange: %v", after)
	}
}
