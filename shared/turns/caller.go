package turns

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
