package runs

import (
	"time"

	"github.com/commonly/runtime/shared/money"
)

// Summary is what a list of runs shows of one (GET /v1/me/runs): where
// it ran, how it ended, what it used and cost, and when. A finished
// run's summary is kept on its item and projected on the user-runs index
// (tablekeys.UserRunsSummary); its run and user ids are the index's keys.
type Summary struct {
	RunID       string       `json:"runId" dynamodbav:"-"`
	UserID      string       `json:"userId" dynamodbav:"-"`
	InstallID   string       `json:"installId" dynamodbav:"installId"`
	Engine      string       `json:"engine" dynamodbav:"engine"`
	Model       string       `json:"model,omitempty" dynamodbav:"model,omitempty"`
	Status      Status       `json:"status" dynamodbav:"status"`
	ErrorKind   ErrorKind    `json:"errorKind,omitempty" dynamodbav:"errorKind,omitempty"`
	Tokens      Tokens       `json:"tokens" dynamodbav:"tokens"`
	CostMicros  money.Micros `json:"costMicros" dynamodbav:"costMicros"`
	CreatedAt   time.Time    `json:"createdAt" dynamodbav:"createdAt"`
	StartedAt   *time.Time   `json:"startedAt,omitempty" dynamodbav:"startedAt,omitempty"`
	CompletedAt *time.Time   `json:"completedAt,omitempty" dynamodbav:"completedAt,omitempty"`
}

// Summary is the run's summary as it stands.
func (r *Run) Summary() Summary {
	return Summary{
		RunID: r.RunID, UserID: r.UserID, InstallID: r.InstallID, Engine: r.Engine, Model: r.Model,
		Status: r.Status, ErrorKind: r.ErrorKind, Tokens: r.Tokens, CostMicros: r.CostMicros,
		CreatedAt: r.CreatedAt, StartedAt: r.StartedAt, CompletedAt: r.CompletedAt,
	}
}
