package turns

import "strings"

// Caller is who makes a request, as established by the JWT authorizer and
// nothing else.
type Caller struct {
	// ID is the token's subject: a user id, or the backend's client id.
	ID string
	// Service is true for the Commonly backend (scope commonly/admin).
	Service bool
}

// canActFor reports whether the caller may act on a resource owned by userID.
func (c Caller) canActFor(userID string) bool { return c.Service || (c.ID != "" && c.ID == userID) }

// ServiceScope marks the Commonly backend's tokens.
const ServiceScope = "commonly/admin"

// CallerFromClaims is the caller a verified token's claims name, and
// nothing else: sub, and the service scope in "scope" or "scp" (API
// Gateway flattens a scope claim to a space-separated string; some
// issuers use "scp", or an array rendered as "[a b]"). The API's handler
// (its authorizer's claims) and the events function (its own verifier's)
// read callers through it.
func CallerFromClaims(claims map[string]string) Caller {
	service := false
	for _, claim := range []string{claims["scope"], claims["scp"]} {
		for _, s := range strings.Fields(strings.Trim(claim, "[]")) {
			if strings.Trim(s, `",`) == ServiceScope {
				service = true
			}
		}
	}
	return Caller{ID: claims["sub"], Service: service}
}
