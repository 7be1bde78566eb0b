package turns

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/commonly/runtime/shared/jsonraw"
)

// Errors of a bearer token a verifier refused. The API answers both with
// 401 unauthenticated, saying which in WWW-Authenticate (RFC 6750).
var (
	ErrInvalidToken = errors.New("invalid bearer token")
	// ErrTokenExpired is an ErrInvalidToken: the token's exp has passed.
	ErrTokenExpired = fmt.Errorf("%w: expired", ErrInvalidToken)
)

// CheckTokenSubject reads a compact JWT's payload as it was sent, before
// any JSON decoding, and returns ErrMalformedIdentity when a sub claim is
// a string that decoding would change: bytes that are not UTF-8, or an
// escaped lone surrogate. Go's encoding/json (and others) decode either
// to U+FFFD, so two different subjects would become one user. Every
// place that sees the raw token checks it: the events function's
// verifier, the local gateway, and the turn function, which reads the
// Authorization header API Gateway's authorizer verified. A token that
// is not a JWT, or has no string sub, is nil here: verification refuses
// it, or it names nobody.
func CheckTokenSubject(token string) error {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil
	}
	payload, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(parts[1], "="))
	if err != nil {
		return nil
	}
	// Every top-level "sub", not only the last a decoder would keep.
	dec := json.NewDecoder(bytes.NewReader(payload))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil
		}
		if key == "sub" && len(raw) > 0 && raw[0] == '"' && !jsonraw.FaithfulString(raw) {
			return ErrMalformedIdentity
		}
	}
	return nil
}
