package tools

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/commonly/runtime/shared/llm"
)

// The gate decides, once per turn, which tools the model is offered. What
// it offers is also all that may run: dispatch looks a called name up in
// the Set, so a tool the model names without having been offered it is
// refused.

var (
	// ErrUnknownTool: an install's tools list names a tool this deployment
	// does not have. A configuration error, not silently dropped.
	ErrUnknownTool = errors.New("tools: unknown tool")
	// ErrUnknownConnector: an install enables a connector this deployment
	// does not have.
	ErrUnknownConnector = errors.New("tools: unknown connector")
	// ErrConnectorCheck: the user's connection could not be checked.
	ErrConnectorCheck = errors.New("tools: connection check failed")
)

// Catalog is every tool a deployment can offer: the built-in tools, and
// per connector the tools that act through the user's connection to it.
type Catalog struct {
	Builtins   []Tool
	Connectors map[string][]Tool
}

// Selection is what an install chose, for one user.
type Selection struct {
	UserID string
	// Tools, when non-nil, is exactly what may be offered (an empty list
	// offers nothing). Nil offers every built-in tool and every tool of
	// the enabled connectors.
	Tools *[]string
	// Connectors the install enables.
	Connectors []string
}

// ConnectionChecker reports whether a user's connection to a connector is
// active now. *broker.Client implements it.
type ConnectionChecker interface {
	ConnectionActive(ctx context.Context, userID, connector string) (bool, error)
}

// Offer builds the turn's Set. A connector's tools are offered only when
// the install enables the connector, the user's connection is active and,
// with a tools list, the list names them. The connection is checked only
// when the connector would contribute a tool. A failed check is an error,
// not an omission: the caller decides whether the turn goes on without.
//
// The order is the catalog's (built-ins, then connectors by name), not the
// list's, so that the same install offers the same prompt prefix every
// turn and the provider's prompt cache hits.
func Offer(ctx context.Context, cat Catalog, sel Selection, conns ConnectionChecker) (*Set, error) {
	known, err := index(cat)
	if err != nil {
		return nil, err
	}
	var listed map[string]bool
	if sel.Tools != nil {
		listed = make(map[string]bool, len(*sel.Tools))
		for _, name := range *sel.Tools {
			if !known[name] {
				return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
			}
			listed[name] = true
		}
	}
	wanted := func(t Tool) bool { return listed == nil || listed[t.Spec().Name] }

	set := &Set{byName: map[string]Tool{}}
	for _, t := range cat.Builtins {
		if wanted(t) {
			set.add(t)
		}
	}

	enabled := slices.Clone(sel.Connectors)
	slices.Sort(enabled)
	for _, name := range slices.Compact(enabled) {
		ts, ok := cat.Connectors[name]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownConnector, name)
		}
		var offer []Tool
		for _, t := range ts {
			if wanted(t) {
				offer = append(offer, t)
			}
		}
		if len(offer) == 0 {
			continue
		}
		if conns == nil {
			return nil, fmt.Errorf("%w: connector %q: no checker", ErrConnectorCheck, name)
		}
		active, err := conns.ConnectionActive(ctx, sel.UserID, name)
		if err != nil {
			return nil, fmt.Errorf("%w: connector %q: %w", ErrConnectorCheck, name, err)
		}
		if !active {
			continue
		}
		for _, t := range offer {
			set.add(t)
		}
	}
	return set, nil
}

// index is the set of the catalog's tool names. A name given twice is
// refused: dispatch could not tell the two tools apart.
func index(cat Catalog) (map[string]bool, error) {
	known := map[string]bool{}
	add := func(t Tool) error {
		name := t.Spec().Name
		if name == "" {
			return fmt.Errorf("tools: a tool has no name")
		}
		if known[name] {
			return fmt.Errorf("tools: tool %q is in the catalog twice", name)
		}
		known[name] = true
		return nil
	}
	for _, t := range cat.Builtins {
		if err := add(t); err != nil {
			return nil, err
		}
	}
	for _, ts := range cat.Connectors {
		for _, t := range ts {
			if err := add(t); err != nil {
				return nil, err
			}
		}
	}
	return known, nil
}

// Set is the tools offered for one turn; the zero or nil Set offers none.
type Set struct {
	tools  []Tool
	byName map[string]Tool
}

func (s *Set) add(t Tool) {
	s.tools = append(s.tools, t)
	s.byName[t.Spec().Name] = t
}

// Specs are the offered tools' specs, in a stable order.
func (s *Set) Specs() []llm.ToolSpec {
	if s == nil {
		return nil
	}
	specs := make([]llm.ToolSpec, len(s.tools))
	for i, t := range s.tools {
		specs[i] = t.Spec()
	}
	return specs
}

// Lookup finds an offered tool by name. A tool that was not offered is
// not found, whatever the model asks for.
func (s *Set) Lookup(name string) (Tool, bool) {
	if s == nil {
		return nil, false
	}
	t, ok := s.byName[name]
	return t, ok
}

// Tools are the offered tools in the order of Specs, for the turn's owner
// to close the Closers among them.
func (s *Set) Tools() []Tool {
	if s == nil {
		return nil
	}
	return slices.Clone(s.tools)
}
