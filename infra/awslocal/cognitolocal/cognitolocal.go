// Package cognitolocal is the local stand-in for an Amazon Cognito user
// pool as the API's JWT issuer: its OIDC discovery document and JWKS on
// loopback (what API Gateway's JWT authorizer and the events function's
// verifier fetch), and tokens signed with its RSA key in the shapes
// Cognito issues. An ID token names the app client in aud; an access
// token names it in client_id, has no aud, and carries token_use
// "access" and the granted scopes. The events function's tests use it.
package cognitolocal

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/commonly/runtime/internal/loopback"
)

// KeyID is the kid of the pool's signing key.
const KeyID = "local-pool-key-1"

// Pool is a user pool's issuer.
type Pool struct {
	// URL is the issuer (iss), where /.well-known/openid-configuration
	// and /.well-known/jwks.json are served.
	URL string
	// ClientID is the app client's id: an ID token's aud, an access
	// token's client_id.
	ClientID string
	key      *rsa.PrivateKey
	http     *loopback.Server
	fetches  atomic.Int64
}

// KeyFetches is how many times the JWKS was served.
func (p *Pool) KeyFetches() int64 { return p.fetches.Load() }

// Start serves a pool with a new 2048-bit RSA key for the app client
// clientID.
func Start(clientID string) (*Pool, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	p := &Pool{ClientID: clientID, key: key}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/openid-configuration", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer": p.URL, "jwks_uri": p.URL + "/.well-known/jwks.json",
			"id_token_signing_alg_values_supported": []string{"RS256"},
			"response_types_supported":              []string{"code", "token"},
			"subject_types_supported":               []string{"public"},
		})
	})
	mux.HandleFunc("GET /.well-known/jwks.json", func(w http.ResponseWriter, _ *http.Request) {
		p.fetches.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: KeyID, Algorithm: "RS256", Use: "sig"}}})
	})
	srv, err := loopback.Serve("127.0.0.1:0", mux)
	if err != nil {
		return nil, fmt.Errorf("cognito stand-in: %w", err)
	}
	p.http, p.URL = srv, srv.URL
	return p, nil
}

// Close stops the server.
func (p *Pool) Close() error { return p.http.Close() }

// IDToken is an ID token for sub, valid for ttl from now.
func (p *Pool) IDToken(sub string, ttl time.Duration) (string, error) {
	now := time.Now()
	return p.Sign(map[string]any{"sub": sub, "iss": p.URL, "aud": p.ClientID, "token_use": "id",
		"auth_time": now.Unix(), "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "cognito:username": sub})
}

// AccessToken is an access token for sub with scopes, valid for ttl.
func (p *Pool) AccessToken(sub string, scopes []string, ttl time.Duration) (string, error) {
	now := time.Now()
	claims := map[string]any{"sub": sub, "iss": p.URL, "client_id": p.ClientID, "token_use": "access",
		"auth_time": now.Unix(), "iat": now.Unix(), "exp": now.Add(ttl).Unix(), "jti": fmt.Sprint(now.UnixNano()), "username": sub}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return p.Sign(claims)
}

// Sign signs claims as they are.
func (p *Pool) Sign(claims map[string]any) (string, error) {
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	return p.SignPayload(payload, KeyID)
}

// SignPayload signs payload's bytes as they are (a payload JSON encoding
// cannot make: a claim that is not valid UTF-8), with kid in the header
// ("" for none).
func (p *Pool) SignPayload(payload []byte, kid string) (string, error) {
	opts := (&jose.SignerOptions{}).WithType("JWT")
	if kid != "" {
		opts = opts.WithHeader("kid", kid)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: p.key}, opts)
	if err != nil {
		return "", err
	}
	sig, err := signer.Sign(payload)
	if err != nil {
		return "", err
	}
	return sig.CompactSerialize()
}
