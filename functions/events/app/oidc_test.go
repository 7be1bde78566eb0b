package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/go-jose/go-jose/v4/jwt"

	"github.com/commonly/runtime/functions/events/app"
)

// issuer is an OIDC issuer on loopback: its discovery document and its
// JWKS (one RSA key), as Cognito or any OIDC provider serves them.
type issuer struct {
	srv *httptest.Server
	key *rsa.PrivateKey
}

func newIssuer(t *testing.T) *issuer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	is := &issuer{key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": is.srv.URL, "jwks_uri": is.srv.URL + "/jwks",
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("GET /jwks", func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: "k1", Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewServer(mux)
	t.Cleanup(is.srv.Close)
	return is
}

// token signs claims with key (the issuer's, or another).
func token(t *testing.T, key *rsa.PrivateKey, claims jwt.Claims, extra map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", "k1"))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := jwt.Signed(signer).Claims(claims).Claims(extra).Serialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// The events function's verifier holds a token to what the API's JWT
// authorizer holds it to: the issuer's signature, the issuer, one of the
// audiences, the expiry; only then are its claims the caller's identity.
func TestOIDCVerifierChecksTokensAsTheAuthorizer(t *testing.T) {
	is := newIssuer(t)
	ctx := context.Background()
	v, err := app.NewOIDCVerifier(ctx, is.srv.URL, []string{"commonly-turns"})
	if err != nil {
		t.Fatal(err)
	}
	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	good := jwt.Claims{Issuer: is.srv.URL, Subject: "user-1", Audience: jwt.Audience{"commonly-turns"},
		IssuedAt: jwt.NewNumericDate(now), Expiry: jwt.NewNumericDate(now.Add(time.Hour))}

	claims, err := v.Verify(ctx, "Bearer "+token(t, is.key, good, map[string]any{"scope": "turns"}))
	if err != nil {
		t.Fatalf("a valid token: %v", err)
	}
	if claims["sub"] != "user-1" || claims["scope"] != "turns" {
		t.Errorf("claims = %v", claims)
	}

	wrongAudience, wrongIssuer, expired := good, good, good
	wrongAudience.Audience = jwt.Audience{"another-api"}
	wrongIssuer.Issuer = "https://issuer.example.com"
	expired.Expiry = jwt.NewNumericDate(now.Add(-time.Hour))
	for name, auth := range map[string]string{
		"no bearer":           token(t, is.key, good, nil),
		"empty bearer":        "Bearer ",
		"not a JWT":           "Bearer not-a-token",
		"another audience":    "Bearer " + token(t, is.key, wrongAudience, nil),
		"another issuer":      "Bearer " + token(t, is.key, wrongIssuer, nil),
		"expired":             "Bearer " + token(t, is.key, expired, nil),
		"signed by another":   "Bearer " + token(t, other, good, nil),
		"unsigned (alg none)": "Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIn0." + jsonB64(t, map[string]any{"iss": is.srv.URL, "sub": "user-1", "aud": "commonly-turns", "exp": now.Add(time.Hour).Unix()}) + ".",
	} {
		if claims, err := v.Verify(ctx, auth); err == nil {
			t.Errorf("%s: accepted, claims %v", name, claims)
		}
	}
}

// jsonB64 is v as a JWT segment: JSON, base64url without padding.
func jsonB64(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
