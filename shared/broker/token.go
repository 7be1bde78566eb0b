package broker

import (
	"context"
	"fmt"
	"net/http"
	"time"
)

type tokenRequest struct {
	Audience string `json:"audience"`
	Scope    string `json:"scope,omitempty"`
}

type tokenAnswer struct {
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

// Token asks for a short-lived token that lets the runtime act as the
// user toward audience. It is fetched per call and never cached, so a
// revoked connection stops working at the next call. ErrNotConnected
// means the user has no active connection for the audience.
func (c *Client) Token(ctx context.Context, userID, audience string) (string, error) {
	if err := required("user id", userID, "audience", audience); err != nil {
		return "", err
	}
	var a tokenAnswer
	status, err := c.do(ctx, http.MethodPost, []string{"v1", "users", userID, "tokens"}, tokenRequest{Audience: audience}, &a)
	if err != nil {
		return "", fmt.Errorf("token for %q: %w", audience, err)
	}
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		return "", fmt.Errorf("token for %q: %w", audience, ErrNotConnected)
	default:
		return "", fmt.Errorf("token for %q: %w", audience, unexpected(status))
	}
	if a.Token == "" {
		return "", fmt.Errorf("token for %q: %w: empty token", audience, ErrUnavailable)
	}
	if _, err := time.Parse(time.RFC3339, a.ExpiresAt); err != nil {
		return "", fmt.Errorf("token for %q: %w: expiresAt is not an RFC 3339 instant", audience, ErrUnavailable)
	}
	return a.Token, nil
}
