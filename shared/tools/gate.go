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
	specs, err := index(cat)
	if err != nil {
		return nil, err
	}
	var listed map[string]bool
	if sel.Tools != nil {
		listed = make(map[string]bool, len(*sel.Tools))
		for _, name := range *sel.Tools {
			if !specs.known[name] {
				return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
			}
			listed[name] = true
		}
	}
	wanted := func(s llm.ToolSpec) bool { return listed == nil || listed[s.Name] }

	set := &Set{byName: map[string]Tool{}}
	for i, t := range cat.Builtins {
		if s := specs.builtins[i]; wanted(s) {
			set.add(t, s)
		}
	}

	enabled := slices.Clone(sel.Connectors)
	slices.Sort(enabled)
	for _, name := range slices.Compact(enabled) {
		ts, ok := cat.Connectors[name]
		if !ok {
			return nil, fmt.Errorf("%w %q", ErrUnknownConnector, name)
		}
		var offer []int
		for i := range ts {
			if wanted(specs.connectors[name][i]) {
				offer = append(offer, i)
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
		for _, i := range offer {
			set.add(ts[i], specs.connectors[name][i])
		}
	}
	return set, nil
}

// catalogSpecs are the catalog's specs, each tool's read once: the
// built-ins' in their order, each connector's in its tools' order, and the
// set of their names.
type catalogSpecs struct {
	builtins   []llm.ToolSpec
	connectors map[string][]llm.ToolSpec
	known      map[string]bool
}

// index reads the catalog's specs. A name given twice is refused: dispatch
// could not tell the two tools apart.
func index(cat Catalog) (catalogSpecs, error) {
	specs := catalogSpecs{connectors: make(map[string][]llm.ToolSpec, len(cat.Connectors)), known: map[string]bool{}}
	add := func(t Tool) (llm.ToolSpec, error) {
		s := t.Spec()
		if s.Name == "" {
			return s, fmt.Errorf("tools: a tool has no name")
		}
		if specs.known[s.Name] {
			return s, fmt.Errorf("tools: tool %q is in the catalog twice", s.Name)
		}
		specs.known[s.Name] = true
		return s, nil
	}
	specs.builtins = make([]llm.ToolSpec, len(cat.Builtins))
	for i, t := range cat.Builtins {
		s, err := add(t)
		if err != nil {
			return catalogSpecs{}, err
		}
		specs.builtins[i] = s
	}
	for name, ts := range cat.Connectors {
		cs := make([]llm.ToolSpec, len(ts))
		for i, t := range ts {
			s, err := add(t)
			if err != nil {
				return catalogSpecs{}, err
			}
			cs[i] = s
		}
		specs.connectors[name] = cs
	}
	return specs, nil
}

// Set is the tools offered for one turn; the zero or nil Set offers none.
type Set struct {
	tools []Tool
	// specs are the offered tools' specs, read once when they were added.
	specs  []llm.ToolSpec
	byName map[string]Tool
}

func (s *Set) add(t Tool, spec llm.ToolSpec) {
	s.tools = append(s.tools, t)
	s.specs = append(s.specs, spec)
	s.byName[spec.Name] = t
}

// Specs are the offered tools' specs, in a stable order. The slice is the
// caller's; the specs' Parameters are shared and must only be read.
func (s *Set) Specs() []llm.ToolSpec {
	if s == nil {
		return nil
	}
	specs := make([]llm.ToolSpec, len(s.specs))
	copy(specs, s.specs)
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
