package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/coreos/go-oidc/v3/oidc"
	jose "github.com/go-jose/go-jose/v4"

	"github.com/commonly/runtime/shared/turns"
)

// rsaAlgs are the signing algorithms API Gateway's JWT authorizer takes:
// "currently only RSA-based algorithms are supported"
// (docs: http-api-jwt-authorizer.html).
var rsaAlgs = []string{oidc.RS256, oidc.RS384, oidc.RS512}

// rsaJoseAlgs are rsaAlgs as go-jose names them, for hasKeyID.
var rsaJoseAlgs = []jose.SignatureAlgorithm{jose.RS256, jose.RS384, jose.RS512}

// OIDCVerifier checks bearer tokens as API Gateway's JWT authorizer
// checks its identity source (docs: http-api-jwt-authorizer.html), so the
// events function accepts exactly the tokens the API accepts: the token
// alone or after "Bearer "; an RSA signature by the key of the issuer's
// JWKS (found by OIDC discovery) that its kid header names; iss the
// issuer; aud one of the audiences or, only when there is no aud,
// client_id one of them (a Cognito access token has client_id and no
// aud); exp after now, nbf and iat, when present, not after now. go-oidc
// fetches and caches the keys and checks signature, iss and exp; the
// rest is checked here.
type OIDCVerifier struct {
	v         *oidc.IDTokenVerifier
	audiences []string
	now       func() time.Time
}

// NewOIDCVerifier discovers the issuer's keys (one request, at a cold
// start), fetched again at most once each KeyRefetchInterval.
func NewOIDCVerifier(ctx context.Context, issuer string, audiences []string) (*OIDCVerifier, error) {
	client := &http.Client{Timeout: 10 * time.Second, Transport: newRefetchLimit(http.DefaultTransport, KeyRefetchInterval)}
	p, err := oidc.NewProvider(oidc.ClientContext(ctx, client), issuer)
	if err != nil {
		return nil, fmt.Errorf("discover JWT issuer %s: %w", issuer, err)
	}
	// The audience is checked below: aud or client_id, any of several.
	v := p.Verifier(&oidc.Config{SkipClientIDCheck: true, SupportedSigningAlgs: rsaAlgs})
	return &OIDCVerifier{v: v, audiences: audiences, now: time.Now}, nil
}

// Verify checks an Authorization header and returns the token's claims
// flattened to strings, as the authorizer passes them. A refused token
// is a turns.ErrInvalidToken (turns.ErrTokenExpired past its exp); a
// subject that JSON decoding would change, turns.ErrMalformedIdentity.
func (o *OIDCVerifier) Verify(ctx context.Context, authorization string) (map[string]string, error) {
	raw, _ := strings.CutPrefix(authorization, "Bearer ")
	if raw == "" {
		return nil, turns.ErrUnauthenticated
	}
	if err := hasKeyID(raw); err != nil {
		return nil, err
	}
	tok, err := o.v.Verify(ctx, raw)
	var expired *oidc.TokenExpiredError
	switch {
	case errors.As(err, &expired) && !expired.Expiry.IsZero():
		return nil, turns.ErrTokenExpired
	case err != nil:
		return nil, fmt.Errorf("%w: %w", turns.ErrInvalidToken, err)
	}
	// The subject, as sent, before the claims are decoded.
	if err := turns.CheckTokenSubject(raw); err != nil {
		return nil, err
	}
	var claims map[string]any
	if err := tok.Claims(&claims); err != nil {
		return nil, fmt.Errorf("%w: claims: %w", turns.ErrInvalidToken, err)
	}
	if err := o.checkClaims(tok, claims); err != nil {
		return nil, err
	}
	return Flatten(claims), nil
}

// hasKeyID refuses a token whose header names no key: the authorizer
// requires the kid of a key of the JWKS (go-oidc would try every key).
func hasKeyID(raw string) error {
	jws, err := jose.ParseSigned(raw, rsaJoseAlgs)
	if err != nil {
		return fmt.Errorf("%w: %w", turns.ErrInvalidToken, err)
	}
	if len(jws.Signatures) != 1 || jws.Signatures[0].Header.KeyID == "" {
		return fmt.Errorf("%w: no kid", turns.ErrInvalidToken)
	}
	return nil
}

// checkClaims checks what go-oidc does not, as the authorizer does.
func (o *OIDCVerifier) checkClaims(tok *oidc.IDToken, claims map[string]any) error {
	// aud when present, else client_id.
	ok := false
	if len(tok.Audience) > 0 {
		ok = slices.ContainsFunc(tok.Audience, func(a string) bool { return slices.Contains(o.audiences, a) })
	} else if id, isString := claims["client_id"].(string); isString {
		ok = slices.Contains(o.audiences, id)
	}
	if !ok {
		return fmt.Errorf("%w: not for this API's audience", turns.ErrInvalidToken)
	}
	now := float64(o.now().Unix())
	for _, name := range []string{"nbf", "iat"} {
		if v, present := claims[name]; present {
			if t, isNum := v.(float64); !isNum || t > now {
				return fmt.Errorf("%w: %s is not before now", turns.ErrInvalidToken, name)
			}
		}
	}
	return nil
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
