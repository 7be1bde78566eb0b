package e2b

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/commonly/runtime/shared/sandbox"
)

// Metadata keys we attach to every sandbox; the reaper lists by MetaApp
// and MetaStage (Owner).
const (
	MetaApp = "app"
	// MetaStage is the deployment (STAGE) that created the sandbox: one
	// E2B team may serve several stages, and each stage's reaper kills
	// only its own.
	MetaStage     = "stage"
	MetaRunID     = "runId"
	MetaUserID    = "userId"
	MetaInstallID = "installId"
	MetaDeadline  = "deadline"
	// AppName is the value of MetaApp on our sandboxes.
	AppName = "commonly-turns"
)

// Sandbox is the answer to create (the Sandbox schema).
type Sandbox struct {
	TemplateID      string `json:"templateID"`
	SandboxID       string `json:"sandboxID"`
	Alias           string `json:"alias,omitempty"`
	ClientID        string `json:"clientID"`
	EnvdVersion     string `json:"envdVersion"`
	EnvdAccessToken string `json:"envdAccessToken,omitempty"`
	// TrafficAccessToken is issued because public traffic is closed.
	TrafficAccessToken *string `json:"trafficAccessToken"`
	Domain             *string `json:"domain"`
}

// ListedSandbox is one row of the v2 list.
type ListedSandbox struct {
	TemplateID  string            `json:"templateID"`
	Alias       string            `json:"alias,omitempty"`
	SandboxID   string            `json:"sandboxID"`
	ClientID    string            `json:"clientID"`
	StartedAt   time.Time         `json:"startedAt"`
	EndAt       time.Time         `json:"endAt"`
	CPUCount    int32             `json:"cpuCount"`
	MemoryMB    int32             `json:"memoryMB"`
	DiskSizeMB  int32             `json:"diskSizeMB"`
	Metadata    map[string]string `json:"metadata,omitempty"`
	State       string            `json:"state"`
	EnvdVersion string            `json:"envdVersion"`
}

// newSandbox is the create body. Every field that closes the sandbox is
// set here, without omitempty, so that no caller can reopen it: the API
// defaults (15 s TTL, internet on for SDK users) are all wrong for us.
type newSandbox struct {
	TemplateID          string            `json:"templateID"`
	Timeout             int32             `json:"timeout"`
	AllowInternetAccess bool              `json:"allow_internet_access"`
	Network             newNetwork        `json:"network"`
	EnvVars             map[string]string `json:"envVars"`
	Secure              bool              `json:"secure"`
	AutoPause           bool              `json:"autoPause"`
	Metadata            map[string]string `json:"metadata"`
}

type newNetwork struct {
	AllowPublicTraffic bool `json:"allowPublicTraffic"`
}

// CreateSandbox creates a closed sandbox with the given metadata: no
// internet, no public traffic, no environment variables, secure, killed
// (not paused) after sandbox.Lifetime. Refusals for capacity are retried
// after a jittered, doubling wait that ends with ctx.
func (c *Client) CreateSandbox(ctx context.Context, metadata map[string]string) (Sandbox, error) {
	if metadata == nil {
		metadata = map[string]string{}
	}
	body := newSandbox{
		TemplateID:          c.cfg.Template,
		Timeout:             int32(sandbox.Lifetime / time.Second),
		AllowInternetAccess: false,
		Network:             newNetwork{AllowPublicTraffic: false},
		EnvVars:             map[string]string{}, // empty, never null: nothing of ours enters
		Secure:              true,
		AutoPause:           false,
		Metadata:            metadata,
	}
	for attempt := 0; ; attempt++ {
		var sb Sandbox
		_, err := c.call(ctx, "create sandbox", http.MethodPost, "/sandboxes", body, &sb, http.StatusCreated)
		if err == nil {
			if sb.SandboxID == "" {
				return Sandbox{}, errors.New("e2b: create sandbox: answer has no sandboxID")
			}
			return sb, nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) || !apiErr.Retryable() || attempt >= c.createRetries {
			return Sandbox{}, err
		}
		if werr := c.createBackoff.Wait(ctx, attempt); werr != nil {
			return Sandbox{}, fmt.Errorf("e2b: create sandbox: %w (after %v)", werr, err)
		}
	}
}

// Kill destroys a sandbox. A sandbox that is already gone is success: the
// caller wanted it dead.
func (c *Client) Kill(ctx context.Context, sandboxID string) error {
	_, err := c.KillSandbox(ctx, sandboxID)
	return err
}

// KillSandbox destroys a sandbox and reports whether it was still there:
// a 404 is success with found false (it ended by itself or was killed by
// someone else), which the reaper counts apart from its own kills.
func (c *Client) KillSandbox(ctx context.Context, sandboxID string) (found bool, err error) {
	_, err = c.call(ctx, "kill sandbox", http.MethodDelete, "/sandboxes/"+url.PathEscape(sandboxID), nil, nil, http.StatusNoContent)
	switch {
	case errors.Is(err, ErrNotFound):
		return false, nil
	case err != nil:
		return false, err
	}
	return true, nil
}
