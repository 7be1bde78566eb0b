package apigatewaylocal

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/commonly/runtime/functions/turn/handler"
	"github.com/commonly/runtime/shared/turns"
)

// Issuer and Audience of local tokens; the verifier requires both, as the
// API Gateway JWT authorizer does for its configured issuer and audience.
const (
	Issuer   = "commonly-local"
	Audience = "commonly-turns"
)

// MintToken signs a local HS256 token for sub with the given scopes.
func MintToken(secret []byte, sub string, scopes []string, ttl time.Duration, now time.Time) (string, error) {
	claims := jwt.MapClaims{
		"sub": sub, "iss": Issuer, "aud": Audience,
		"iat": now.Unix(), "exp": now.Add(ttl).Unix(),
	}
	if len(scopes) > 0 {
		claims["scope"] = strings.Join(scopes, " ")
	}
	return jwt.NewWithClaims(jwt.SigningMethodHS256, claims).SignedString(secret)
}

// ServiceSubject is the subject of the Commonly backend's tokens.
const ServiceSubject = "commonly-backend"

// MintServiceToken signs a local token for sub with the service scope
// (handler.ServiceScope), valid 24 h: the Commonly backend's, with
// ServiceSubject.
func MintServiceToken(secret []byte, sub string, now time.Time) (string, error) {
	return MintToken(secret, sub, []string{handler.ServiceScope}, 24*time.Hour, now)
}

// VerifyToken checks an Authorization header (the token alone or after
// "Bearer ", as the authorizer takes it) and returns the claims flattened
// to strings, as API Gateway passes them to the function; then the raw
// subject, as the events function's verifier does (the local stack's
// events route uses this one). Errors are turns' token errors.
func VerifyToken(secret []byte, authorization string, now time.Time) (map[string]string, error) {
	claims, err := verifyClaims(secret, authorization, now)
	if err != nil {
		return nil, err
	}
	raw, _ := strings.CutPrefix(authorization, "Bearer ")
	if err := turns.CheckTokenSubject(raw); err != nil {
		return nil, err
	}
	return claims, nil
}

// verifyClaims is the authorizer's check: the signature, issuer,
// audience and expiry, and no more (API Gateway passes the claims it
// decoded; the turn function reads the raw subject itself).
func verifyClaims(secret []byte, authorization string, now time.Time) (map[string]string, error) {
	raw, _ := strings.CutPrefix(authorization, "Bearer ")
	if raw == "" {
		return nil, turns.ErrUnauthenticated
	}
	claims := jwt.MapClaims{}
	_, err := jwt.ParseWithClaims(raw, claims, func(t *jwt.Token) (any, error) { return secret, nil },
		jwt.WithValidMethods([]string{"HS256"}), jwt.WithIssuer(Issuer), jwt.WithIssuedAt(),
		jwt.WithExpirationRequired(), jwt.WithTimeFunc(func() time.Time { return now }))
	switch {
	case errors.Is(err, jwt.ErrTokenExpired):
		return nil, turns.ErrTokenExpired
	case err != nil:
		return nil, fmt.Errorf("%w: %w", turns.ErrInvalidToken, err)
	case !forAudience(claims):
		return nil, fmt.Errorf("%w: not for this API's audience", turns.ErrInvalidToken)
	}
	out := make(map[string]string, len(claims))
	for k, v := range claims {
		out[k] = flattenClaim(v)
	}
	return out, nil
}

// forAudience is the authorizer's audience rule: aud when the token has
// one, else client_id (a Cognito access token has no aud).
func forAudience(claims jwt.MapClaims) bool {
	if aud, err := claims.GetAudience(); err == nil && len(aud) > 0 {
		return slices.Contains(aud, Audience)
	}
	id, _ := claims["client_id"].(string)
	return id == Audience
}

// flattenClaim renders a claim the way API Gateway HTTP APIs do: strings
// as they are, numbers in decimal, arrays as "[a b]".
func flattenClaim(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		if v == float64(int64(v)) {
			return fmt.Sprintf("%d", int64(v))
		}
		return fmt.Sprint(v)
	case []any:
		parts := make([]string, len(v))
		for i, e := range v {
			parts[i] = flattenClaim(e)
		}
		return "[" + strings.Join(parts, " ") + "]"
	}
	return fmt.Sprint(v)
}
