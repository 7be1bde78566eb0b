package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"maps"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/commonly/runtime/functions/events/app"
	"github.com/commonly/runtime/infra/awslocal/cognitolocal"
	"github.com/commonly/runtime/shared/turns"
)

const audience = "commonly-turns"

func startPool(t *testing.T) *cognitolocal.Pool {
	t.Helper()
	pool, err := cognitolocal.Start(audience)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pool.Close() })
	return pool
}

// mustFor is a check of a signing's error, for t.
func mustFor(t *testing.T) func(string, error) string {
	return func(tok string, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
}

// The events function's verifier takes exactly what the API's JWT
// authorizer takes (docs: http-api-jwt-authorizer.html): both shapes of
// a Cognito token (an ID token's aud, an access token's client_id
// without aud), with or without "Bearer ", signed by the key its kid
// names, from the issuer, not expired, nbf and iat not ahead; and it
// says why it refuses one.
func TestOIDCVerifierAcceptsWhatTheAuthorizerAccepts(t *testing.T) {
	pool := startPool(t)
	must := mustFor(t)
	ctx := context.Background()
	v, err := app.NewOIDCVerifier(ctx, pool.URL, []string{"other-client", audience})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	base := map[string]any{"sub": "user-1", "iss": pool.URL, "iat": now.Unix(), "exp": now.Add(time.Hour).Unix()}
	with := func(extra map[string]any, drop ...string) string {
		c := maps.Clone(base)
		maps.Copy(c, extra)
		for _, k := range drop {
			delete(c, k)
		}
		return must(pool.Sign(c))
	}

	for name, auth := range map[string]string{
		"an ID token":                  "Bearer " + must(pool.IDToken("user-1", time.Hour)),
		"an access token":              "Bearer " + must(pool.AccessToken("user-1", []string{"turns"}, time.Hour)),
		"the token alone":              must(pool.AccessToken("user-1", nil, time.Hour)),
		"aud among several":            "Bearer " + with(map[string]any{"aud": []string{"x", audience}}),
		"client_id ignored beside aud": "Bearer " + with(map[string]any{"aud": audience, "client_id": "x"}),
		"no iat":                       "Bearer " + with(map[string]any{"aud": audience}, "iat"),
	} {
		claims, err := v.Verify(ctx, auth)
		if err != nil || claims["sub"] != "user-1" {
			t.Errorf("%s: %v %v", name, claims, err)
		}
	}
	if claims, _ := v.Verify(ctx, "Bearer "+must(pool.AccessToken("user-1", []string{"commonly/admin", "x"}, time.Hour))); !turns.CallerFromClaims(claims).Service {
		t.Errorf("an access token's scope: %v", claims)
	}

	other, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	noKid := must(pool.SignPayload(mustJSON(t, map[string]any{"sub": "user-1", "iss": pool.URL, "aud": audience, "exp": now.Add(time.Hour).Unix()}), ""))
	wrongKid := must(pool.SignPayload(mustJSON(t, map[string]any{"sub": "user-1", "iss": pool.URL, "aud": audience, "exp": now.Add(time.Hour).Unix()}), "another-key"))
	for name, c := range map[string]struct {
		auth string
		want error
	}{
		"no token":                   {"Bearer ", turns.ErrUnauthenticated},
		"not a JWT":                  {"Bearer not-a-token", turns.ErrInvalidToken},
		"another audience":           {"Bearer " + with(map[string]any{"aud": "another-api"}), turns.ErrInvalidToken},
		"aud wrong, client_id right": {"Bearer " + with(map[string]any{"aud": "another-api", "client_id": audience}), turns.ErrInvalidToken},
		"another client_id":          {"Bearer " + with(map[string]any{"client_id": "another-client"}), turns.ErrInvalidToken},
		"neither aud nor client_id":  {"Bearer " + with(nil), turns.ErrInvalidToken},
		"another issuer":             {"Bearer " + with(map[string]any{"aud": audience, "iss": "https://issuer.example.com"}), turns.ErrInvalidToken},
		"expired":                    {"Bearer " + with(map[string]any{"aud": audience, "exp": now.Add(-time.Minute).Unix()}), turns.ErrTokenExpired},
		"no exp":                     {"Bearer " + with(map[string]any{"aud": audience}, "exp"), turns.ErrInvalidToken},
		"nbf ahead":                  {"Bearer " + with(map[string]any{"aud": audience, "nbf": now.Add(2 * time.Minute).Unix()}), turns.ErrInvalidToken},
		"iat ahead":                  {"Bearer " + with(map[string]any{"aud": audience, "iat": now.Add(2 * time.Minute).Unix()}), turns.ErrInvalidToken},
		"no kid":                     {"Bearer " + noKid, turns.ErrInvalidToken},
		"a kid not in the JWKS":      {"Bearer " + wrongKid, turns.ErrInvalidToken},
		"signed by another key":      {"Bearer " + signWith(t, other, jose.RS256, map[string]any{"sub": "user-1", "iss": pool.URL, "aud": audience, "exp": now.Add(time.Hour).Unix()}), turns.ErrInvalidToken},
		"unsigned (alg none)": {"Bearer eyJhbGciOiJub25lIiwidHlwIjoiSldUIiwia2lkIjoibG9jYWwtcG9vbC1rZXktMSJ9." +
			base64.RawURLEncoding.EncodeToString(mustJSON(t, map[string]any{"iss": pool.URL, "sub": "user-1", "aud": audience, "exp": now.Add(time.Hour).Unix()})) + ".", turns.ErrInvalidToken},
		"a sub not UTF-8":            {"Bearer " + must(pool.SignPayload([]byte(`{"sub":"u`+"\xff"+`1","iss":"`+pool.URL+`","aud":"`+audience+`","exp":`+jsonNum(now.Add(time.Hour).Unix())+`}`), cognitolocal.KeyID)), turns.ErrMalformedIdentity},
		"a sub escaping half a pair": {"Bearer " + must(pool.SignPayload([]byte(`{"sub":"u\udcff1","iss":"`+pool.URL+`","aud":"`+audience+`","exp":`+jsonNum(now.Add(time.Hour).Unix())+`}`), cognitolocal.KeyID)), turns.ErrMalformedIdentity},
	} {
		claims, err := v.Verify(ctx, c.auth)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: %v, claims %v; want %v", name, err, claims, c.want)
		}
		if errors.Is(c.want, turns.ErrInvalidToken) && c.want != turns.ErrTokenExpired && errors.Is(err, turns.ErrTokenExpired) {
			t.Errorf("%s: called expired: %v", name, err)
		}
	}
}

// signWith signs claims with a key the pool does not publish, under the
// pool's kid.
func signWith(t *testing.T, key *rsa.PrivateKey, alg jose.SignatureAlgorithm, claims map[string]any) string {
	t.Helper()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg, Key: key}, (&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", cognitolocal.KeyID))
	if err != nil {
		t.Fatal(err)
	}
	sig, err := signer.Sign(mustJSON(t, claims))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := sig.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonNum(n int64) string { b, _ := json.Marshal(n); return string(b) }

// A flood of forged tokens does not make the verifier fetch the issuer's
// keys again and again (go-oidc would on every failed signature): once
// in KeyRefetchInterval at most.
func TestForgedTokensDoNotRefetchTheKeys(t *testing.T) {
	pool := startPool(t)
	other := startPool(t) // the same kid, another key
	must := mustFor(t)
	v, err := app.NewOIDCVerifier(context.Background(), pool.URL, []string{audience})
	if err != nil {
		t.Fatal(err)
	}
	forged := "Bearer " + must(other.Sign(map[string]any{"sub": "user-1", "iss": pool.URL, "aud": audience, "exp": time.Now().Add(time.Hour).Unix()}))
	for range 20 {
		if _, err := v.Verify(context.Background(), forged); !errors.Is(err, turns.ErrInvalidToken) {
			t.Fatalf("a forged token: %v", err)
		}
	}
	if _, err := v.Verify(context.Background(), "Bearer "+must(pool.IDToken("user-1", time.Hour))); err != nil {
		t.Fatalf("a good token after the flood: %v", err)
	}
	if n := pool.KeyFetches(); n > 2 {
		t.Errorf("the keys were fetched %d times", n)
	}
}
