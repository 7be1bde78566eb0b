package app

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/coreos/go-oidc/v3/oidc"
)

// OIDCVerifier checks bearer tokens as API Gateway's JWT authorizer
// does: signed by a key of the issuer's JWKS (found by OIDC discovery),
// issued by the issuer, for one of the audiences, not expired. go-oidc
// fetches and caches the keys.
type OIDCVerifier struct {
	v         *oidc.IDTokenVerifier
	audiences []string
}

// NewOIDCVerifier discovers the issuer's keys (one request, at a cold start).
func NewOIDCVerifier(ctx context.Context, issuer string, audiences []string) (*OIDCVerifier, error) {
	p, err := oidc.NewProvider(ctx, issuer)
	if err != nil {
		return nil, fmt.Errorf("discover JWT issuer %s: %w", issuer, err)
	}
	// The audience is checked below: the authorizer accepts any of several.
	v := p.Verifier(&oidc.Config{SkipClientIDCheck: true})
	return &OIDCVerifier{v: v, audiences: audiences}, nil
}

// Verify checks an Authorization header and returns the token's claims
// flattened to strings, as the authorizer passes them.
func (o *OIDCVerifier) Verify(ctx context.Context, authorization string) (map[string]string, error) {
	raw, ok := strings.CutPrefix(authorization, "Bearer ")
	if !ok || raw == "" {
		return nil, errors.New("no bearer token")
	}
	tok, err := o.v.Verify(ctx, raw)
	if err != nil {
		return nil, fmt.Errorf("invalid token: %w", err)
	}
	if !slices.ContainsFunc(tok.Audience, func(a string) bool { return slices.Contains(o.audiences, a) }) {
		return nil, errors.New("invalid token: not for this API's audience")
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("invalid token claims: %w", err)
	}
	return Flatten(claims), nil
}

// Flatten renders claims as API Gateway's authorizer does: strings as
// they are, arrays as "[a b]", other values in their JSON text.
func Flatten(claims map[string]any) map[string]string {
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		switch v := v.(type) {
		case string:
			out[k] = v
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			out[k] = "[" + strings.Join(parts, " ") + "]"
		default:
			out[k] = fmt.Sprint(v)
		}
	}
	return out
}
