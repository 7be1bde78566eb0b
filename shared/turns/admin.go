package turns

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/commonly/runtime/shared/tablekeys"
)

// Field bounds for installs: the system prompt is the largest field a
// backend may set and is sent with every model call.
const (
	MaxSystemPromptChars = 8000
	MaxToolsListed       = 64
	maxNameChars         = 128
)

// InstallRequest is PUT /v1/installs/{installId}. Pointer fields are
// optional: nil leaves the stored value as it is.
type InstallRequest struct {
	UserID       string
	PodID        string
	AgentName    string
	InstanceID   *string
	Engine       *string
	Tools        *[]string
	Connectors   *[]string
	Model        *string
	SystemPrompt *string
}

// PutInstall creates or updates an install (service callers only). It
// reports whether the install was created.
func (s *Service) PutInstall(ctx context.Context, c Caller, installID string, req InstallRequest) (*Install, bool, error) {
	if err := requireService(c); err != nil {
		return nil, false, err
	}
	if !tablekeys.ValidID(installID) {
		return nil, false, Invalid("installId", tablekeys.IDRule)
	}
	for _, f := range []struct{ field, id string }{{"userId", req.UserID}, {"podId", req.PodID}, {"agentName", req.AgentName}} {
		if !tablekeys.ValidID(f.id) {
			return nil, false, Invalid(f.field, "is required and "+tablekeys.IDRule)
		}
	}
	existing, err := s.store.GetInstall(ctx, installID)
	created := errors.Is(err, ErrNotFound)
	if err != nil && !created {
		return nil, false, wrapUnavailable("read install", err)
	}
	now := s.now().UTC()
	in := &Install{InstallID: installID, CreatedAt: now}
	if !created {
		in = existing
		if in.UserID != req.UserID {
			// Moving an install to another user would hand over its memory and runs.
			return nil, false, Invalid("userId", "cannot change the owner of an existing install")
		}
	}
	in.UserID, in.PodID, in.AgentName, in.UpdatedAt = req.UserID, req.PodID, req.AgentName, now
	if req.InstanceID != nil {
		in.InstanceID = *req.InstanceID
	}
	if in.InstanceID == "" {
		in.InstanceID = installID
	}
	if !tablekeys.ValidID(in.InstanceID) {
		return nil, false, Invalid("instanceId", tablekeys.IDRule)
	}
	if req.Engine != nil {
		e, err := ParseEngine(*req.Engine)
		if err != nil {
			return nil, false, Invalid("engine", "%v", err)
		}
		in.Engine = e
	} else if created {
		in.Engine = s.cfg.DefaultEngine
	}
	if req.Tools != nil {
		if err := validNames("tools", "tool", *req.Tools, s.cfg.Tools); err != nil {
			return nil, false, err
		}
		t := append([]string{}, *req.Tools...)
		in.Tools = &t
	}
	if req.Connectors != nil {
		if err := validNames("connectors", "connector", *req.Connectors, s.cfg.Connectors); err != nil {
			return nil, false, err
		}
		in.Connectors = append([]string{}, *req.Connectors...)
	}
	if req.Model != nil {
		if len(*req.Model) > maxNameChars {
			return nil, false, Invalid("model", "is longer than %d characters", maxNameChars)
		}
		in.Model = *req.Model
	}
	if req.SystemPrompt != nil {
		if n := len([]rune(*req.SystemPrompt)); n > MaxSystemPromptChars {
			return nil, false, Invalid("systemPrompt", "is %d characters, the limit is %d", n, MaxSystemPromptChars)
		}
		in.SystemPrompt = *req.SystemPrompt
	}
	if err := s.store.PutInstall(ctx, in); err != nil {
		return nil, false, wrapUnavailable("write install", err)
	}
	s.installs.evict(installID)
	return in, created, nil
}

// validNames checks an install's list of tools or connectors: each name
// must be one of known (exactly), and the refusal says which are.
func validNames(field, kind string, names, known []string) error {
	if len(names) > MaxToolsListed {
		return Invalid(field, "lists more than %d names", MaxToolsListed)
	}
	for _, n := range names {
		if !slices.Contains(known, n) {
			list := strings.Join(known, ", ")
			if list == "" {
				list = "none"
			}
			return Invalid(field, "names %q, which is not a known %s; the known ones are: %s", n, kind, list)
		}
	}
	return nil
}

// Install is an install as stored (service only): GET of an install, to
// read its engine and migration beside the engine in effect.
func (s *Service) Install(ctx context.Context, c Caller, installID string) (*Install, error) {
	if err := requireService(c); err != nil {
		return nil, err
	}
	if !tablekeys.ValidID(installID) {
		return nil, Invalid("installId", tablekeys.IDRule)
	}
	in, err := s.store.GetInstall(ctx, installID)
	if err != nil {
		return nil, wrapUnavailable("read install", err)
	}
	return in, nil
}

// MigrationRequest is POST /v1/installs/{installId}/migration.
type MigrationRequest struct {
	To    string
	State string
}

// Migrate records a move of an install between engines (service only).
func (s *Service) Migrate(ctx context.Context, c Caller, installID string, req MigrationRequest) (*Install, error) {
	if err := requireService(c); err != nil {
		return nil, err
	}
	if !tablekeys.ValidID(installID) {
		return nil, Invalid("installId", tablekeys.IDRule)
	}
	to, err := ParseEngine(req.To)
	if err != nil {
		return nil, Invalid("to", "%v", err)
	}
	state, err := ParseMigrationState(req.State)
	if err != nil {
		return nil, Invalid("state", "%v", err)
	}
	in, err := s.store.GetInstall(ctx, installID)
	if err != nil {
		return nil, wrapUnavailable("read install", err)
	}
	m := StartMigration(*in, s.cfg.DefaultEngine, to, state, s.now())
	if m.From == m.To {
		// Whatever the state: a move to the engine the install already
		// runs is no move ("done" would record one that never happened,
		// "rolled-back" one that cannot be undone).
		return nil, Invalid("to", "the install already runs on %s", to)
	}
	updated, err := s.store.SetMigration(ctx, installID, m)
	if err != nil {
		return nil, wrapUnavailable("write migration", err)
	}
	s.installs.evict(installID)
	return updated, nil
}

// SetPlan sets a user's plan (service only).
func (s *Service) SetPlan(ctx context.Context, c Caller, userID, plan string) (Plan, error) {
	if err := requireService(c); err != nil {
		return "", err
	}
	if !tablekeys.ValidID(userID) {
		return "", Invalid("userId", tablekeys.IDRule)
	}
	p, err := ParsePlan(plan)
	if err != nil {
		return "", Invalid("plan", "%v", err)
	}
	if err := s.store.SetPlan(ctx, userID, p, s.now()); err != nil {
		return "", wrapUnavailable("write plan", err)
	}
	s.plans.put(userID, p)
	return p, nil
}

func requireService(c Caller) error {
	if c.ID == "" {
		return ErrUnauthenticated
	}
	if !c.Service {
		return fmt.Errorf("service scope required: %w", ErrForbidden)
	}
	return nil
}

// EffectiveEngine is the engine a turn of in would run on now.
func (s *Service) EffectiveEngine(in *Install) EngineName {
	return EffectiveEngine(*in, s.cfg.DefaultEngine)
}
