package turns

// A hosted install (an agent placed in a pod for a user) and the rule
// that picks the engine its turns run on.

import (
	"fmt"
	"slices"
	"time"
)

// EngineName is the runtime a turn runs on.
type EngineName string

const (
	// Native is our own agent loop, run in Lambda.
	Native EngineName = "native"
	// DurableObject is the older Cloudflare runtime, kept as the fallback
	// until parity.
	DurableObject EngineName = "durable-object"
)

// ParseEngine validates an engine name.
func ParseEngine(s string) (EngineName, error) {
	switch e := EngineName(s); e {
	case Native, DurableObject:
		return e, nil
	}
	return "", fmt.Errorf("unknown engine %q (want %q or %q)", s, Native, DurableObject)
}

// MigrationState is where a move between engines stands.
type MigrationState string

const (
	MigrationInProgress MigrationState = "in-progress"
	MigrationDone       MigrationState = "done"
	MigrationRolledBack MigrationState = "rolled-back"
)

// ParseMigrationState validates a migration state.
func ParseMigrationState(s string) (MigrationState, error) {
	switch m := MigrationState(s); m {
	case MigrationInProgress, MigrationDone, MigrationRolledBack:
		return m, nil
	}
	return "", fmt.Errorf("unknown migration state %q", s)
}

// Migration records a move of an install from one engine to another.
type Migration struct {
	From      EngineName     `json:"from" dynamodbav:"from"`
	To        EngineName     `json:"to" dynamodbav:"to"`
	State     MigrationState `json:"state" dynamodbav:"state"`
	UpdatedAt time.Time      `json:"updatedAt" dynamodbav:"updatedAt"`
}

// Install is a hosted install.
type Install struct {
	InstallID  string `json:"installId" dynamodbav:"installId"`
	UserID     string `json:"userId" dynamodbav:"userId"`
	PodID      string `json:"podId" dynamodbav:"podId"`
	AgentName  string `json:"agentName" dynamodbav:"agentName"`
	InstanceID string `json:"instanceId" dynamodbav:"instanceId"`
	// Engine is the engine chosen for the install; empty means the
	// deployment default (HOSTED_ENGINE) at the time of each turn.
	Engine EngineName `json:"engine,omitempty" dynamodbav:"engine,omitempty"`
	// Tools is exactly what is offered to the model; nil (not set) means
	// every built-in tool, an empty list means none.
	Tools        *[]string  `json:"tools,omitempty" dynamodbav:"tools,omitempty"`
	Connectors   []string   `json:"connectors,omitempty" dynamodbav:"connectors,omitempty"`
	Model        string     `json:"model,omitempty" dynamodbav:"model,omitempty"`
	SystemPrompt string     `json:"systemPrompt,omitempty" dynamodbav:"systemPrompt,omitempty"`
	Migration    *Migration `json:"migration,omitempty" dynamodbav:"migration,omitempty"`
	CreatedAt    time.Time  `json:"createdAt" dynamodbav:"createdAt"`
	UpdatedAt    time.Time  `json:"updatedAt" dynamodbav:"updatedAt"`
}

// Clone returns a copy of in that shares nothing with it: its lists and
// its migration are copied too.
func (in *Install) Clone() *Install {
	cp := *in
	if in.Tools != nil {
		t := slices.Clone(*in.Tools)
		if t == nil {
			t = []string{} // "no tools" stays distinct from "every tool"
		}
		cp.Tools = &t
	}
	cp.Connectors = slices.Clone(in.Connectors)
	if in.Migration != nil {
		m := *in.Migration
		cp.Migration = &m
	}
	return &cp
}

// EffectiveEngine is the engine a turn of this install runs on now.
//
// A migration in progress keeps the engine it is moving from: the Durable
// Object stays the fallback until parity is declared with "done", at
// which point the target applies; "rolled-back" returns to the old engine.
// Without a migration the install's own engine applies, or the default.
func EffectiveEngine(in Install, def EngineName) EngineName {
	base := in.Engine
	if base == "" {
		base = def
	}
	m := in.Migration
	if m == nil {
		return base
	}
	switch m.State {
	case MigrationDone:
		return m.To
	case MigrationInProgress, MigrationRolledBack:
		if m.From != "" {
			return m.From
		}
	}
	return base
}

// StartMigration returns the migration that a request to move to "to" with
// the given state produces on this install, as of now. The engine being
// left is the one in effect before the request, so a migration always
// starts from what users are actually served by.
func StartMigration(in Install, def EngineName, to EngineName, state MigrationState, now time.Time) Migration {
	from := EffectiveEngine(in, def)
	if in.Migration != nil && in.Migration.To == to && in.Migration.From != "" {
		// Continuing, finishing or rolling back the same move keeps its
		// origin: rolling back after "done" returns to the engine the move
		// started from, not to the target it reached.
		from = in.Migration.From
	}
	return Migration{From: from, To: to, State: state, UpdatedAt: now.UTC()}
}
