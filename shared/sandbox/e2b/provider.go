package e2b

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// ProviderName is recorded on sandbox records.
const ProviderName = "e2b"

var _ sandbox.Provider = (*Client)(nil)

// Name implements sandbox.Provider.
func (c *Client) Name() string { return ProviderName }

// Create implements sandbox.Provider: a closed sandbox tagged with the
// turn's identifiers. A refusal for capacity that outlasts the retries is
// sandbox.ErrUnavailable (the turn goes on without code execution).
func (c *Client) Create(ctx context.Context, meta sandbox.Meta) (sandbox.Session, error) {
	deadline := meta.Deadline
	if deadline.IsZero() {
		deadline = c.now().Add(sandbox.Lifetime)
	}
	sb, err := c.CreateSandbox(ctx, Metadata(c.cfg.Stage, meta.RunID, meta.UserID, meta.InstallID, deadline))
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && apiErr.Retryable() {
			return nil, fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err)
		}
		return nil, err
	}
	return &Session{client: c, handle: HandleOf(sb)}, nil
}

// Metadata is what we attach to a sandbox. Values are strings, as the API
// requires.
func Metadata(stage, runID, userID, installID string, deadline time.Time) map[string]string {
	return map[string]string{
		MetaApp:       AppName,
		MetaStage:     stage,
		MetaRunID:     runID,
		MetaUserID:    userID,
		MetaInstallID: installID,
		MetaDeadline:  deadline.UTC().Format(time.RFC3339),
	}
}

// Session is one E2B sandbox.
type Session struct {
	client *Client
	handle Handle
}

var _ sandbox.Session = (*Session)(nil)

// ID implements sandbox.Session.
func (s *Session) ID() string { return s.handle.SandboxID }

// Execute implements sandbox.Session.
func (s *Session) Execute(ctx context.Context, lang sandbox.Language, code string) (sandbox.Execution, error) {
	return s.client.Execute(ctx, s.handle, lang, code)
}

// Kill implements sandbox.Session; a sandbox already gone is success.
func (s *Session) Kill(ctx context.Context) error {
	return s.client.Kill(ctx, s.handle.SandboxID)
}

// Owner is the list filter of a stage's sandboxes: ours (MetaApp) and of
// that deployment (MetaStage). The API ANDs the pairs.
func Owner(stage string) map[string]string {
	return map[string]string{MetaApp: AppName, MetaStage: stage}
}
