// Package apitest holds the turn API's code and its OpenAPI document
// together: tests pass every API Gateway event they send and every
// response they get through Check, which validates both against
// api/openapi.json with kin-openapi's openapi3filter, and records what was
// seen so that a test can require every documented response to have been
// produced (Missing).
//
// Check fails the test when
//   - the route (method and path) is not in the document;
//   - the response's status, content type, body or headers are not the
//     ones documented for that route (an undocumented header included);
//   - the document calls the request invalid (parameters, body, security)
//     and the response is not a 4xx, or calls it valid and the function
//     refused it as malformed_body;
//   - the request lacks the identity or the scope the route's security
//     requires and the response is not 401 or 403, or has them and the
//     response is 401.
package apitest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"

	"github.com/commonly/runtime/api"
	"github.com/commonly/runtime/shared/tablekeys"
	"github.com/commonly/runtime/shared/turns"
)

// ProblemTypeBase prefixes every problem type in the document.
const ProblemTypeBase = "https://commonly.dev/problems/"

// Validator checks exchanges against one document and remembers which
// documented responses it has seen.
type Validator struct {
	doc *openapi3.T

	mu   sync.Mutex
	seen map[string]bool
}

// New loads the served document (api.JSON).
func New() (*Validator, error) {
	return NewFromData([]byte(api.JSON))
}

// NewFromData loads a document given as JSON or YAML.
func NewFromData(data []byte) (*Validator, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	return &Validator{doc: doc, seen: map[string]bool{}}, nil
}

var (
	defaultOnce sync.Once
	defaultV    *Validator
	defaultErr  error
)

// Shared is the validator of the served document, one per test binary,
// so that its Missing covers all of the binary's tests.
func Shared() (*Validator, error) {
	defaultOnce.Do(func() { defaultV, defaultErr = New() })
	return defaultV, defaultErr
}

// Default is Shared, failing t when the document cannot be loaded.
func Default(t testing.TB) *Validator {
	t.Helper()
	v, err := Shared()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// Check validates one exchange with the default validator.
func Check(t testing.TB, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	Default(t).Check(t, req, resp)
}

// Document is the loaded document.
func (v *Validator) Document() *openapi3.T { return v.doc }

// Check validates the request an API Gateway event carries and the
// function's response to it.
func (v *Validator) Check(t testing.TB, req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	if err := v.Validate(req, resp); err != nil {
		t.Errorf("OpenAPI contract (api/openapi.yaml): %s %s → %d: %s\nresponse body: %s",
			req.RequestContext.HTTP.Method, requestPath(req), resp.StatusCode, clip(err.Error(), 3000), clip(resp.Body, 600))
	}
}

// Validate is Check returning the violations as one error.
func (v *Validator) Validate(req events.APIGatewayV2HTTPRequest, resp events.APIGatewayV2HTTPResponse) error {
	method := req.RequestContext.HTTP.Method
	template, params, found := v.route(req)
	var pathItem *openapi3.PathItem
	if found {
		pathItem = v.doc.Paths.Value(template)
	}
	if !found || pathItem.GetOperation(method) == nil {
		if req.RouteKey != "" && req.RouteKey != "$default" {
			return fmt.Errorf("route %q is not in the document", req.RouteKey)
		}
		// API Gateway's $default route: the function answers what no
		// route matches itself.
		if found {
			return v.checkUnrouted(resp, http.StatusMethodNotAllowed, "MethodNotAllowed")
		}
		return v.checkUnrouted(resp, http.StatusNotFound, "RouteNotFound")
	}
	op := pathItem.GetOperation(method)
	httpReq, err := httpRequest(req, template, params)
	if err != nil {
		return err
	}
	route := &routers.Route{Spec: v.doc, Path: template, PathItem: pathItem, Method: method, Operation: op}
	opts := &openapi3filter.Options{
		MultiError:            true,
		SkipSettingDefaults:   true,
		IncludeResponseStatus: true,
		AuthenticationFunc:    openapi3filter.NoopAuthenticationFunc,
	}
	in := &openapi3filter.RequestValidationInput{Request: httpReq, PathParams: params, Route: route, Options: opts}
	ctx := context.Background()

	var errs []error
	status := resp.StatusCode
	problem := problemSlug(resp)
	v.see(op.OperationID + " " + strconv.Itoa(status))
	if problem != "" {
		v.see("problem " + problem)
	}

	// Security, as the document declares it, against the authorizer's claims.
	security := v.doc.Security
	if op.Security != nil {
		security = *op.Security
	}
	secReq, _ := httpRequest(req, template, params) // its own body: the check reads it
	secOpts := *opts
	secOpts.AuthenticationFunc = authenticate(req)
	secIn := &openapi3filter.RequestValidationInput{Request: secReq, PathParams: params, Route: route, Options: &secOpts}
	switch secErr := openapi3filter.ValidateSecurityRequirements(ctx, secIn, security); {
	case secErr == nil && status == http.StatusUnauthorized:
		errs = append(errs, errors.New("the request satisfies the route's security, yet the answer is 401"))
	case errors.Is(secErr, errNoIdentity) && status != http.StatusUnauthorized:
		errs = append(errs, fmt.Errorf("the request has no identity, which the route requires, yet the answer is %d, not 401", status))
	case errors.Is(secErr, errNoScope) && status != http.StatusForbidden && status != http.StatusUnauthorized:
		errs = append(errs, fmt.Errorf("the request lacks the scope the route requires, yet the answer is %d, not 403", status))
	case secErr != nil && !errors.Is(secErr, errNoIdentity) && !errors.Is(secErr, errNoScope):
		errs = append(errs, fmt.Errorf("security: %w", secErr))
	}

	// The request's parameters and body; a query parameter the document
	// does not list is drift too (openapi3filter ignores it).
	reqErr := openapi3filter.ValidateRequest(ctx, in)
	if reqErr == nil && op.RequestBody != nil && !oneJSONText(req) {
		// openapi3filter decodes the first JSON value and ignores what
		// follows it; a JSON body is one JSON text (RFC 8259).
		reqErr = errors.New("the body is not one JSON text")
	}
	for name := range httpReq.URL.Query() {
		if !documentedQuery(pathItem, op, name) {
			errs = append(errs, fmt.Errorf("query parameter %q is not documented for %s", name, op.OperationID))
		}
	}
	switch {
	case reqErr != nil && (status < 400 || status >= 500):
		errs = append(errs, fmt.Errorf("the document calls the request invalid (%v), yet the answer is %d", reqErr, status))
	case reqErr == nil && problem == "malformed_body":
		errs = append(errs, errors.New("the document calls the request valid, yet the function refused it as malformed_body: the request schema is looser than the code"))
	}

	// The response: status, content type, headers and body.
	header := http.Header{}
	for k, val := range resp.Headers {
		header.Set(k, val)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			return fmt.Errorf("response body: %w", err)
		}
	}
	out := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: in, Status: status, Header: header, Body: io.NopCloser(bytes.NewReader(body)), Options: opts,
	}
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		errs = append(errs, fmt.Errorf("response: %w", err))
	}
	if r := op.Responses.Status(status); r != nil && r.Value != nil {
		for name := range resp.Headers {
			if !strings.EqualFold(name, "Content-Type") && !documentedHeader(r.Value, name) {
				errs = append(errs, fmt.Errorf("response header %q is not documented for %s %d", name, op.OperationID, status))
			}
		}
	}
	return errors.Join(errs...)
}

// Missing lists what the document promises and the checked exchanges
// never showed: each operation's documented statuses ("createTurn 429")
// and each problem type ("problem turn_ceiling_reached"), sorted.
func (v *Validator) Missing() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	var missing []string
	for _, p := range v.doc.Paths.InMatchingOrder() {
		for _, op := range v.doc.Paths.Value(p).Operations() {
			if OtherFunction(op) {
				// Its own tests check it (ValidateEvent and the statuses).
				continue
			}
			for code := range op.Responses.Map() {
				if key := op.OperationID + " " + code; !v.seen[key] {
					missing = append(missing, key)
				}
			}
		}
	}
	for _, slug := range v.ProblemTypes() {
		if s := v.doc.Components.Schemas[problemSchema(slug)]; s != nil && s.Value != nil && otherFunction(s.Value.Extensions) {
			continue // another function's own tests produce it
		}
		if !v.seen["problem "+slug] {
			missing = append(missing, "problem "+slug)
		}
	}
	sort.Strings(missing)
	return missing
}

// ProblemTypes are the slugs of the document's problem schemas (a
// schema whose type is a const under ProblemTypeBase).
func (v *Validator) ProblemTypes() []string {
	var slugs []string
	for _, s := range v.doc.Components.Schemas {
		if s.Value == nil || s.Value.Properties["type"] == nil || s.Value.Properties["type"].Value == nil {
			continue
		}
		if c, ok := s.Value.Properties["type"].Value.Const.(string); ok && strings.HasPrefix(c, ProblemTypeBase) {
			slugs = append(slugs, strings.TrimPrefix(c, ProblemTypeBase))
		}
	}
	sort.Strings(slugs)
	return slugs
}

func (v *Validator) see(key string) {
	v.mu.Lock()
	v.seen[key] = true
	v.mu.Unlock()
}

// route finds the document's path for the event: its RouteKey when API
// Gateway matched one, otherwise the raw path matched against the
// document's templates.
func (v *Validator) route(req events.APIGatewayV2HTTPRequest) (template string, params map[string]string, found bool) {
	if req.RouteKey != "" && req.RouteKey != "$default" {
		_, template, _ = strings.Cut(req.RouteKey, " ")
		return template, req.PathParameters, v.doc.Paths.Value(template) != nil
	}
	segs := strings.Split(strings.Trim(req.RawPath, "/"), "/")
	for _, p := range v.doc.Paths.InMatchingOrder() {
		if params, ok := matchTemplate(p, segs); ok {
			return p, params, true
		}
	}
	return "", nil, false
}

func matchTemplate(template string, segs []string) (map[string]string, bool) {
	want := strings.Split(strings.Trim(template, "/"), "/")
	if len(want) != len(segs) {
		return nil, false
	}
	params := map[string]string{}
	for i, w := range want {
		if name, ok := strings.CutPrefix(w, "{"); ok && strings.HasSuffix(name, "}") {
			if segs[i] == "" {
				return nil, false
			}
			params[strings.TrimSuffix(name, "}")] = segs[i]
		} else if w != segs[i] {
			return nil, false
		}
	}
	return params, true
}

// checkUnrouted validates the function's answer to a request no route of
// the document matches against components/responses/<name>.
func (v *Validator) checkUnrouted(resp events.APIGatewayV2HTTPResponse, status int, name string) error {
	if resp.StatusCode != status {
		return fmt.Errorf("no route of the document matches, so the answer must be %d, not %d", status, resp.StatusCode)
	}
	ref := v.doc.Components.Responses[name]
	if ref == nil || ref.Value == nil {
		return fmt.Errorf("components/responses/%s is missing", name)
	}
	ct := resp.Headers["Content-Type"]
	media := ref.Value.Content.Get(ct)
	if media == nil || media.Schema == nil || media.Schema.Value == nil {
		return fmt.Errorf("content type %q is not documented in components/responses/%s", ct, name)
	}
	var body any
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		return fmt.Errorf("problem body: %w", err)
	}
	if err := media.Schema.Value.VisitJSON(body, openapi3.EnableJSONSchema2020(), openapi3.MultiErrors()); err != nil {
		return fmt.Errorf("components/responses/%s: %w", name, err)
	}
	v.see("problem " + problemSlug(resp))
	return nil
}

func documentedQuery(item *openapi3.PathItem, op *openapi3.Operation, name string) bool {
	for _, params := range []openapi3.Parameters{item.Parameters, op.Parameters} {
		if p := params.GetByInAndName(openapi3.ParameterInQuery, name); p != nil {
			return true
		}
	}
	return false
}

func documentedHeader(r *openapi3.Response, name string) bool {
	for h := range r.Headers {
		if strings.EqualFold(h, name) {
			return true
		}
	}
	return false
}

// httpRequest rebuilds the HTTP request an event stands for. With a
// matched route the path is built from the route and its parameters, as
// the function reads them.
func httpRequest(req events.APIGatewayV2HTTPRequest, template string, params map[string]string) (*http.Request, error) {
	path := req.RawPath
	if req.RouteKey != "" && req.RouteKey != "$default" {
		path = template
		for k, val := range params {
			path = strings.ReplaceAll(path, "{"+k+"}", url.PathEscape(val))
		}
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return nil, fmt.Errorf("request body: %w", err)
		}
		body = b
	}
	u := &url.URL{Path: path, RawQuery: req.RawQueryString}
	r, err := http.NewRequest(req.RequestContext.HTTP.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, val := range req.Headers {
		r.Header.Set(k, val)
	}
	return r, nil
}

var (
	errNoIdentity = errors.New("no identity in the authorizer's claims")
	errNoScope    = errors.New("the token lacks a required scope")
)

// authenticate checks a bearer requirement against the event's JWT
// claims: a subject, and every scope the requirement lists.
func authenticate(req events.APIGatewayV2HTTPRequest) openapi3filter.AuthenticationFunc {
	return func(_ context.Context, in *openapi3filter.AuthenticationInput) error {
		a := req.RequestContext.Authorizer
		// A sub that breaks the id rule, or that the token sent as text
		// JSON decoding changed, is no identity (bearerAuth's
		// description): the function answers 401 malformed_identity.
		token, _ := strings.CutPrefix(req.Headers["authorization"], "Bearer ")
		if a == nil || a.JWT == nil || !tablekeys.ValidID(a.JWT.Claims["sub"]) || turns.CheckTokenSubject(token) != nil {
			return errNoIdentity
		}
		granted := append(strings.Fields(a.JWT.Claims["scope"]), a.JWT.Scopes...)
		for _, s := range in.Scopes {
			if !slices.Contains(granted, s) {
				return errNoScope
			}
		}
		return nil
	}
}

// oneJSONText reports whether an event's body is one JSON value, and
// nothing but white space after it.
func oneJSONText(req events.APIGatewayV2HTTPRequest) bool {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return false
		}
		body = b
	}
	return json.Valid(body)
}

// problemSlug is the slug of a problem response's type, or "".
func problemSlug(resp events.APIGatewayV2HTTPResponse) string {
	if resp.Headers["Content-Type"] != "application/problem+json" {
		return ""
	}
	var p struct {
		Type string `json:"type"`
	}
	if json.Unmarshal([]byte(resp.Body), &p) != nil {
		return ""
	}
	return strings.TrimPrefix(p.Type, ProblemTypeBase)
}

func requestPath(req events.APIGatewayV2HTTPRequest) string {
	if req.RouteKey != "" && req.RouteKey != "$default" {
		_, template, _ := strings.Cut(req.RouteKey, " ")
		return template + " " + fmt.Sprint(req.PathParameters)
	}
	return req.RawPath
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
