package tools

import (
	"context"
	"encoding/json"
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

// Catalog is every tool a deployment knows: the built-in tools, the
// opt-in ones, and per connector the tools that act through the user's
// connection to it. A tool the deployment knows but has not configured
// (web search without a key) is in it as an Unconfigured stand-in, so
// that its name stays valid in an install's list. Its names are all an
// install may list (Names, ConnectorNames).
type Catalog struct {
	Builtins []Tool
	// OptIn tools are offered only to an install whose list names them:
	// commonly_run_code (code execution is opt-in per install).
	OptIn      []Tool
	Connectors map[string][]Tool
}

// Selection is what an install chose, for one user.
type Selection struct {
	UserID string
	// Tools, when non-nil, is exactly what may be offered (an empty list
	// offers nothing). Nil offers every built-in tool (not the opt-in
	// ones) and every tool of the enabled connectors.
	Tools *[]string
	// Connectors the install enables.
	Connectors []string
}

// Unconfigured stands in the catalog for a tool this deployment knows
// but cannot run (web search without SEARCH_API_KEY, the pod tools
// without a backend, a connector's tools without a broker): an install
// may list it, it is never offered, and Set.Unavailable names it.
func Unconfigured(name string) Tool { return unconfigured(name) }

type unconfigured string

func (u unconfigured) Spec() llm.ToolSpec { return llm.ToolSpec{Name: string(u)} }

// Call is never reached through a Set; it fails rather than pretend.
func (u unconfigured) Call(context.Context, Env, json.RawMessage) Result {
	return Errorf("%s is not configured in this deployment", string(u))
}

func configured(t Tool) bool {
	_, no := t.(unconfigured)
	return !no
}

// Names are the names of every tool in the catalog, configured or not,
// sorted: what an install's tools list may name.
func (c Catalog) Names() []string {
	var names []string
	for _, ts := range [][]Tool{c.Builtins, c.OptIn} {
		for _, t := range ts {
			names = append(names, t.Spec().Name)
		}
	}
	for _, ts := range c.Connectors {
		for _, t := range ts {
			names = append(names, t.Spec().Name)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// ConnectorNames are the catalog's connectors, sorted: what an install
// may enable.
func (c Catalog) ConnectorNames() []string {
	names := make([]string, 0, len(c.Connectors))
	for name := range c.Connectors {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// ConnectionChecker reports whether a user's connection to a connector is
// active now. *broker.Client implements it.
type ConnectionChecker interface {
	ConnectionActive(ctx context.Context, userID, connector string) (bool, error)
}

// Offer builds the turn's Set. A connector's tools are offered only when
// the install enables the connector, the user's connection is active and,
// with a tools list, the list names them. The connection is checked only
// when the connector would contribute a configured tool. A failed check
// is an error, not an omission: the caller decides whether the turn goes
// on without. An Unconfigured tool that would have been offered is not;
// the Set's Unavailable names it.
//
// The order is the catalog's (built-ins, opt-in tools, then connectors by
// name), not the list's, so that the same install offers the same prompt
// prefix every turn and the provider's prompt cache hits.
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
	for i, t := range cat.OptIn {
		if s := specs.optIn[i]; listed[s.Name] {
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
		for i, t := range ts {
			switch s := specs.connectors[name][i]; {
			case !wanted(s):
			case !configured(t):
				set.add(t, s) // recorded as unavailable, without a check
			default:
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
	optIn      []llm.ToolSpec
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
	for _, list := range []struct {
		tools []Tool
		specs *[]llm.ToolSpec
	}{{cat.Builtins, &specs.builtins}, {cat.OptIn, &specs.optIn}} {
		*list.specs = make([]llm.ToolSpec, len(list.tools))
		for i, t := range list.tools {
			s, err := add(t)
			if err != nil {
				return catalogSpecs{}, err
			}
			(*list.specs)[i] = s
		}
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
	// unavailable are the Unconfigured tools that would have been offered.
	unavailable []string
}

// add offers t, or records it as unavailable when it is Unconfigured.
func (s *Set) add(t Tool, spec llm.ToolSpec) {
	if !configured(t) {
		s.unavailable = append(s.unavailable, spec.Name)
		return
	}
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

// Unavailable names, in catalog order, the tools the install would have
// been offered that this deployment has not configured; nil when none.
// The run records them.
func (s *Set) Unavailable() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.unavailable)
}

// Tools are the offered tools in the order of Specs, for the turn's owner
// to close the Closers among them.
func (s *Set) Tools() []Tool {
	if s == nil {
		return nil
	}
	return slices.Clone(s.tools)
}
