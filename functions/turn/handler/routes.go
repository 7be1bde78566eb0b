package handler

import (
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/commonly/runtime/api"
)

// route is one route of the API and the handler method that serves it.
type route struct {
	key    string
	access access
	serve  func(*Handler, *request) (events.APIGatewayV2HTTPResponse, error)
}

// access is who may call a route.
type access int

const (
	// callers: any authenticated caller; the service decides per resource.
	callers access = iota
	// service routes answer 403 to any caller but the Commonly backend,
	// before the body is read, so that validation reveals nothing to them.
	service
	// public routes need no identity: API Gateway gives them no authorizer.
	public
)

var routeTable = []route{
	{"PUT /v1/installs/{installId}", service, (*Handler).putInstall},
	{"GET /v1/installs/{installId}", service, (*Handler).getInstall},
	{"POST /v1/installs/{installId}/migration", service, (*Handler).migrate},
	{"PUT /v1/users/{userId}/plan", service, (*Handler).setPlan},
	{"POST /v1/installs/{installId}/turns", callers, (*Handler).submitTurn},
	{"GET /v1/runs/{runId}", callers, (*Handler).getRun},
	{"POST /v1/runs/{runId}/cancel", callers, (*Handler).cancelRun},
	{"GET /v1/me/usage", callers, (*Handler).usage},
	{"GET /v1/users/{userId}/usage", service, (*Handler).userUsage},
	{"GET /v1/me/runs", callers, (*Handler).myRuns},
	{"GET /v1/users/{userId}/runs", service, (*Handler).userRuns},
	{"GET " + api.Path, public, (*Handler).openAPIDocument},
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

// PublicRoutes are the routes that need no identity: the stack gives them
// no authorizer.
var PublicRoutes = routesWith(public)

// ServiceRoutes are the routes only the Commonly backend may call (the
// ServiceScope): the stack may require the scope on them.
var ServiceRoutes = routesWith(service)

func routesWith(a access) []string {
	var keys []string
	for _, r := range routeTable {
		if r.access == a {
			keys = append(keys, r.key)
		}
	}
	return keys
}

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
// matches. pathKnown reports whether the path matched a route of any
// method, so that a miss is a 405 rather than a 404.
//
// Not net/http's ServeMux, though the route keys are its pattern syntax:
// its Handler(req) matches a HEAD to a GET route (API Gateway does not),
// answers an unclean path ("//v1/...") with a redirect, tells a 405 from
// a 404 only by serving the request, and leaves the path parameters
// unset (they are set only while it serves). API Gateway's event needs
// the RouteKey, the parameters and the 404/405 split from the raw path.
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
