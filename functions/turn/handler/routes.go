package handler

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

// route is one route of the API and the handler method that serves it.
type route struct {
	key string
	// serviceOnly routes answer 403 to any other caller, before the body
	// is read, so that validation reveals nothing to them.
	serviceOnly bool
	serve       func(*Handler, *request) (events.APIGatewayV2HTTPResponse, error)
}

var routeTable = []route{
	{"PUT /v1/installs/{installId}", true, (*Handler).putInstall},
	{"POST /v1/installs/{installId}/migration", true, (*Handler).migrate},
	{"PUT /v1/users/{userId}/plan", true, (*Handler).setPlan},
	{"POST /v1/installs/{installId}/turns", false, (*Handler).submitTurn},
	{"GET /v1/runs/{runId}", false, (*Handler).getRun},
	{"GET /v1/me/usage", false, (*Handler).usage},
}

// Routes are the HTTP API's routes, in API Gateway's RouteKey form. The
// CDK stack declares exactly these, and the local server matches requests
// against them to build the same events API Gateway sends.
var Routes = func() []string {
	keys := make([]string, len(routeTable))
	for i, r := range routeTable {
		keys[i] = r.key
	}
	return keys
}()

// lookupRoute returns the route of a RouteKey.
func lookupRoute(key string) (route, bool) {
	for _, r := range routeTable {
		if r.key == key {
			return r, true
		}
	}
	return route{}, false
}

// MatchRoute finds the route of a method and path, as API Gateway does,
// and returns its RouteKey and path parameters; ok is false when no route
// matches. methodAllowed reports whether the path matched another method.
func MatchRoute(method, path string) (routeKey string, params map[string]string, ok, pathKnown bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	for _, r := range Routes {
		m, pattern, _ := strings.Cut(r, " ")
		p, matched := matchPath(pattern, segs)
		if !matched {
			continue
		}
		pathKnown = true
		if m == method {
			return r, p, true, true
		}
	}
	return "", nil, false, pathKnown
}

func matchPath(pattern string, segs []string) (map[string]string, bool) {
	want := strings.Split(strings.Trim(pattern, "/"), "/")
	if len(want) != len(segs) {
		return nil, false
	}
	params := map[string]string{}
	for i, w := range want {
		if strings.HasPrefix(w, "{") && strings.HasSuffix(w, "}") {
			if segs[i] == "" {
				return nil, false
			}
			params[w[1:len(w)-1]] = segs[i]
			continue
		}
		if w != segs[i] {
			return nil, false
		}
	}
	return params, true
}
