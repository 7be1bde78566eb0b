package broker

import (
	"context"
	"fmt"
	"net/http"
)

type connectionAnswer struct {
	Connector string `json:"connector"`
	Status    string `json:"status"`
}

// ConnectionActive reports whether the user's connection to connector is
// active. Revoked, expired and missing connections are false without an
// error; a broker failure is an error, so the caller can tell "not
// connected" from "could not ask".
func (c *Client) ConnectionActive(ctx context.Context, userID, connector string) (bool, error) {
	if err := required("user id", userID, "connector", connector); err != nil {
		return false, err
	}
	var a connectionAnswer
	status, err := c.do(ctx, http.MethodGet, []string{"v1", "users", userID, "connections", connector}, nil, &a)
	if err != nil {
		return false, fmt.Errorf("checking connection %q: %w", connector, err)
	}
	switch status {
	case http.StatusOK:
	case http.StatusNotFound:
		return false, nil
	default:
		return false, fmt.Errorf("checking connection %q: %w", connector, unexpected(status))
	}
	if a.Connector != connector {
		return false, fmt.Errorf("checking connection %q: %w: answer is about connector %q", connector, ErrUnavailable, a.Connector)
	}
	switch a.Status {
	case StatusActive:
		return true, nil
	case StatusRevoked, StatusExpired, StatusMissing:
		return false, nil
	}
	return false, fmt.Errorf("checking connection %q: %w: unknown status %q", connector, ErrUnavailable, a.Status)
}
