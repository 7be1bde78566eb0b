package github

import (
	"context"
	"errors"
	"fmt"
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
		return "", &tools.CallError{Message: "github: could not obtain GitHub credentials for this user", Cause: err}
	}
	_, err = httpwire.Do(ctx, c.hc, httpwire.Request{
		Method: http.MethodGet, URL: u.String(), Bearer: token,
		Header: http.Header{"Accept": {"application/vnd.github+json"}, "X-Github-Api-Version": {APIVersion}},
		OK:     httpwire.Status(http.StatusOK), Out: out, MaxBytes: maxResponse,
	})
	if e, ok := errors.AsType[*httpwire.Error](err); ok {
		return token, failure(e)
	}
	return token, err
}

// failure puts a failed call in words the model can use; the error keeps
// the status and the cause for the log.
func failure(e *httpwire.Error) error {
	switch e.Kind {
	case httpwire.KindContext:
		return fmt.Errorf("github: %w", e.Err)
	case httpwire.KindTransport:
		return e.WithMessage("github: GitHub unreachable")
	case httpwire.KindStatus:
		return e.WithMessage(statusText(e.Status, e.Header))
	case httpwire.KindDecode:
		return e.WithMessage("github: malformed answer from GitHub")
	}
	return e.WithMessage("github: building the request failed")
}

func statusText(s int, h http.Header) string {
	switch {
	case s == http.StatusUnauthorized:
		return fmt.Sprintf("github: GitHub rejected the credentials (status %d)", s)
	case s == http.StatusTooManyRequests || (s == http.StatusForbidden && h.Get("X-RateLimit-Remaining") == "0"):
		return fmt.Sprintf("github: rate limited, try again later (status %d)", s)
	case s == http.StatusForbidden:
		return fmt.Sprintf("github: access denied (status %d)", s)
	case s == http.StatusNotFound:
		return fmt.Sprintf("github: not found, or not visible to this user (status %d)", s)
	case s == http.StatusGone:
		return fmt.Sprintf("github: issues are disabled or the issue was deleted (status %d)", s)
	case s == http.StatusUnprocessableEntity:
		return fmt.Sprintf("github: GitHub rejected the query (status %d)", s)
	case s >= 500:
		return fmt.Sprintf("github: GitHub unavailable (status %d)", s)
	}
	return fmt.Sprintf("github: unexpected answer (status %d)", s)
}
