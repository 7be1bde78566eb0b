package e2b

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// SetTimeout sets the sandbox to die d from now (shortening or
// extending): E2B's call the runtime never makes (a sandbox's lifetime is
// set at creation), kept to test the client's call and the fake's answer.
func (c *Client) SetTimeout(ctx context.Context, sandboxID string, d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("e2b: set timeout: negative duration %v", d)
	}
	secs := int64(d / time.Second)
	if secs > 1<<31-1 {
		return fmt.Errorf("e2b: set timeout: %v is too long", d)
	}
	in := struct {
		Timeout int32 `json:"timeout"`
	}{int32(secs)}
	_, err := c.call(ctx, "set sandbox timeout", http.MethodPost, "/sandboxes/"+url.PathEscape(sandboxID)+"/timeout", in, nil, http.StatusNoContent)
	return err
}
