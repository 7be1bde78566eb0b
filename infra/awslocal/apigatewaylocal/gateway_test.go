package apigatewaylocal

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/golang-jwt/jwt/v5"

	"github.com/commonly/runtime/api"
	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/shared/turns"
)

var secret = []byte("test-secret")

func TestVerifyToken(t *testing.T) {
	now := time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	good, _ := MintToken(secret, "user-1", []string{"commonly/admin", "x"}, time.Hour, now)
	claims, err := VerifyToken(secret, "Bearer "+good, now)
	if err != nil || claims["sub"] != "user-1" || claims["scope"] != "commonly/admin x" || claims["exp"] != "1796216400" {
		t.Fatalf("claims = %v, %v", claims, err)
	}
	expired, _ := MintToken(secret, "user-1", nil, time.Minute, now.Add(-time.Hour))
	otherKey, _ := MintToken([]byte("other"), "user-1", nil, time.Hour, now)
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.MapClaims{"sub": "user-1", "iss": Issuer, "aud": Audience, "exp": now.Add(time.Hour).Unix()}).SignedString(jwt.UnsafeAllowNoneSignatureType)
	noAud, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u", "iss": Issuer, "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	for name, h := range map[string]string{
		"expired": "Bearer " + expired, "wrong key": "Bearer " + otherKey, "alg none": "Bearer " + none,
		"no audience": "Bearer " + noAud, "not bearer": "Basic " + good, "empty": "",
	} {
		if _, err := VerifyToken(secret, h, now); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// Why, in turns' terms; the token alone is taken, as the authorizer
	// takes it.
	if _, err := VerifyToken(secret, "Bearer "+expired, now); !errors.Is(err, turns.ErrTokenExpired) {
		t.Errorf("expired: %v", err)
	}
	if _, err := VerifyToken(secret, "", now); !errors.Is(err, turns.ErrUnauthenticated) {
		t.Errorf("no token: %v", err)
	}
	if _, err := VerifyToken(secret, good, now); err != nil {
		t.Errorf("the token alone: %v", err)
	}
	// An access token's shape: client_id and no aud; a wrong aud is not
	// saved by a right client_id.
	access, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u", "iss": Issuer, "client_id": Audience, "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	wrongAud, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u", "iss": Issuer, "aud": "other", "client_id": Audience, "exp": now.Add(time.Hour).Unix()}).SignedString(secret)
	if c, err := VerifyToken(secret, "Bearer "+access, now); err != nil || c["sub"] != "u" {
		t.Errorf("an access token: %v %v", c, err)
	}
	if _, err := VerifyToken(secret, "Bearer "+wrongAud, now); !errors.Is(err, turns.ErrInvalidToken) {
		t.Errorf("a wrong aud beside a right client_id: %v", err)
	}
	// A sub that is not UTF-8 is refused from the raw token, before the
	// claims' decoding makes it U+FFFD.
	for _, sub := range []string{"u\xff1", "u\xfe1"} {
		bad := hs256(t, `{"sub":"`+sub+`","iss":"`+Issuer+`","aud":"`+Audience+`","exp":`+fmt.Sprint(now.Add(time.Hour).Unix())+`}`)
		if _, err := VerifyToken(secret, "Bearer "+bad, now); !errors.Is(err, turns.ErrMalformedIdentity) {
			t.Errorf("sub %q: %v", sub, err)
		}
	}
}

// hs256 signs a payload's bytes as they are with the test secret.
func hs256(t *testing.T, payload string) string {
	t.Helper()
	head := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`)) + "." + base64.RawURLEncoding.EncodeToString([]byte(payload))
	sig, err := jwt.SigningMethodHS256.Sign(head, secret)
	if err != nil {
		t.Fatal(err)
	}
	return head + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func TestGatewayBuildsAPIGatewayEvents(t *testing.T) {
	var got events.APIGatewayV2HTTPRequest
	g := &Gateway{Secret: secret, Log: discardLogger(), Invoke: func(_ context.Context, ev events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
		got = ev
		return events.APIGatewayV2HTTPResponse{StatusCode: 202, Headers: map[string]string{"Location": "/v1/runs/r1"}, Body: `{"ok":true}`}
	}}
	srv := httptest.NewServer(g)
	defer srv.Close()
	tok, _ := MintToken(secret, "user-1", nil, time.Hour, time.Now())
	req, _ := http.NewRequest("POST", srv.URL+"/v1/installs/inst-1/turns?x=1", strings.NewReader(`{"message":"hi"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 202 || resp.Header.Get("Location") != "/v1/runs/r1" {
		t.Errorf("response %d %v", resp.StatusCode, resp.Header)
	}
	if got.RouteKey != "POST /v1/installs/{installId}/turns" || got.PathParameters["installId"] != "inst-1" || got.Version != "2.0" ||
		got.Headers["idempotency-key"] != "k1" || got.Body != `{"message":"hi"}` || got.RawQueryString != "x=1" ||
		got.RequestContext.HTTP.Method != "POST" || got.RequestContext.Authorizer == nil || got.RequestContext.Authorizer.JWT.Claims["sub"] != "user-1" {
		t.Errorf("event = %+v", got)
	}
	// A bad token reaches the function without claims (it answers 401).
	req, _ = http.NewRequest("GET", srv.URL+"/v1/me/usage", nil)
	req.Header.Set("Authorization", "Bearer forged")
	if resp, err = http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
	}
	if got.RequestContext.Authorizer != nil {
		t.Errorf("forged token produced claims: %+v", got.RequestContext.Authorizer)
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// noStore is never called: the requests of publicOnly's tests stop before
// the turn service.
type noStore struct{ turns.Store }

// publicOnly is a handler whose turn service is never reached.
func publicOnly(t *testing.T) *handler.Handler {
	t.Helper()
	limits, err := turns.ParseLimits(turns.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	w, err := turns.NewWorker(turns.WorkerConfig{Store: noStore{}, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	svc, err := turns.NewService(turns.ServiceConfig{Store: noStore{}, Dispatcher: turns.InlineDispatcher{Worker: w}, Limits: limits, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := handler.New(handler.Config{Service: svc, Worker: w, Log: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestServiceTokenCarriesTheServiceScope(t *testing.T) {
	now := time.Now()
	tok, err := MintServiceToken(secret, ServiceSubject, now)
	if err != nil {
		t.Fatal(err)
	}
	claims, err := VerifyToken(secret, "Bearer "+tok, now)
	if err != nil {
		t.Fatal(err)
	}
	if claims["sub"] != "commonly-backend" || claims["scope"] != handler.ServiceScope || claims["exp"] != fmt.Sprint(now.Add(24*time.Hour).Unix()) {
		t.Errorf("claims %v", claims)
	}
}

// TestPublicRouteNeedsNoToken: the OpenAPI document's route is served
// without a token, and a bad token does not stop it (API Gateway gives the
// route no authorizer); the other routes still answer 401.
func TestPublicRouteNeedsNoToken(t *testing.T) {
	h := publicOnly(t)
	srv := httptest.NewServer(&Gateway{Secret: secret, Invoke: h.HandleHTTP, Log: discardLogger()})
	defer srv.Close()
	get := func(path, auth string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, auth := range []string{"", "Bearer forged"} {
		if status, body := get(api.Path, auth); status != 200 || body != api.JSON {
			t.Errorf("%s with %q: %d (%d bytes)", api.Path, auth, status, len(body))
		}
	}
	if status, _ := get("/v1/me/usage", ""); status != 401 {
		t.Errorf("usage without a token: %d", status)
	}
}
