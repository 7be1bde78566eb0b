package sandbox

import "time"

// Record statuses.
const (
	StatusRunning = "running"
	StatusKilled  = "killed"
)

// Record is the row kept for every sandbox we create, written before the
// first run. It gives the reaper a second source besides the provider's
// own listing: a sandbox that is "running" past ExpiresAt is killed.
type Record struct {
	SandboxID string `json:"sandboxId" dynamodbav:"sandboxId"`
	Provider  string `json:"provider" dynamodbav:"provider"`
	// RunID is omitted when empty: it is a key of the state table's
	// runSandboxes index, where DynamoDB refuses an empty string.
	RunID     string     `json:"runId" dynamodbav:"runId,omitempty"`
	UserID    string     `json:"userId" dynamodbav:"userId"`
	InstallID string     `json:"installId" dynamodbav:"installId"`
	CreatedAt time.Time  `json:"createdAt" dynamodbav:"createdAt"`
	ExpiresAt time.Time  `json:"expiresAt" dynamodbav:"expiresAt"`
	Status    string     `json:"status" dynamodbav:"status"`
	KilledAt  *time.Time `json:"killedAt,omitempty" dynamodbav:"killedAt,omitempty"`
}

// NewRecord is the record of a sandbox just created: running, expiring one
// Lifetime after creation.
func NewRecord(provider, sandboxID string, meta Meta, createdAt time.Time) Record {
	createdAt = createdAt.UTC()
	return Record{
		SandboxID: sandboxID,
		Provider:  provider,
		RunID:     meta.RunID,
		UserID:    meta.UserID,
		InstallID: meta.InstallID,
		CreatedAt: createdAt,
		ExpiresAt: createdAt.Add(Lifetime),
		Status:    StatusRunning,
	}
}

// Expired reports whether a running sandbox outlived its lifetime at now.
func (r Record) Expired(now time.Time) bool {
	return r.Status == StatusRunning && !now.Before(r.ExpiresAt)
}
