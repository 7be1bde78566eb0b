package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/commonly/runtime/shared/broker"
	"github.com/commonly/runtime/shared/httpwire"
	"github.com/commonly/runtime/shared/tools"
)

const maxResponse = 4 << 20

// get fetches a GitHub resource as env's user and decodes it into out. It
// returns the token it used, for the caller to scrub from the answer. Its
// errors are short, safe to show the model, and never hold a token or a
// response body.
func (c *Client) get(ctx context.Context, env tools.Env, segments []string, query url.Values, out any) (string, error) {
	if env.UserID == "" {
		return "", errors.New("github: the turn has no user")
	}
	// An empty, "." or ".." segment is refused: path cleaning would let it
	// reach another endpoint. The tools check the model's names first, so
	// the model gets their clearer message.
	u, err := httpwire.JoinSegments(c.base, segments...)
	if bad, ok := errors.AsType[*httpwire.SegmentError](err); ok {
		return "", fmt.Errorf("github: %w: %q is not a valid path segment", tools.ErrBadArguments, bad.Segment)
	}
	if err != nil {
		return "", fmt.Errorf("github: %w", err)
	}
	u.RawQuery = query.Encode()

	token, err := c.tokens.Token(ctx, env.UserID, Audience)
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return "", fmt.Errorf("github: %w", ctx.Err())
	case errors.Is(err, broker.ErrNotConnected):
		return "", errors.New("github: the user's GitHub connection is not active")
	default:
		return "", errors.New("github: could not obtain GitHub credentials for this user")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", errors.New("github: building the request failed")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Accept", "application/vnd.github+json")
	req.Header.Set("X-GitHub-Api-Version", APIVersion)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return token, fmt.Errorf("github: %w", ctx.Err())
		}
		return token, errors.New("github: GitHub unreachable")
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return token, statusError(resp)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxResponse)).Decode(out); err != nil {
		return token, errors.New("github: malformed answer from GitHub")
	}
	return token, nil
}

func statusError(resp *http.Response) error {
	s := resp.StatusCode
	switch {
	case s == http.StatusUnauthorized:
		return fmt.Errorf("github: GitHub rejected the credentials (status %d)", s)
	case s == http.StatusTooManyRequests || (s == http.StatusForbidden && resp.Header.Get("X-RateLimit-Remaining") == "0"):
		return fmt.Errorf("github: rate limited, try again later (status %d)", s)
	case s == http.StatusForbidden:
		return fmt.Errorf("github: access denied (status %d)", s)
	case s == http.StatusNotFound:
		return fmt.Errorf("github: not found, or not visible to this user (status %d)", s)
	case s == http.StatusGone:
		return fmt.Errorf("github: issues are disabled or the issue was deleted (status %d)", s)
	case s == http.StatusUnprocessableEntity:
		return fmt.Errorf("github: GitHub rejected the query (status %d)", s)
	case s >= 500:
		return fmt.Errorf("github: GitHub unavailable (status %d)", s)
	}
	return fmt.Errorf("github: unexpected answer (status %d)", s)
}
