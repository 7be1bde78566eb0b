package tools_test

import (
	"slices"
	"testing"

	"github.com/commonly/runtime/shared/tools"
	"github.com/commonly/runtime/shared/tools/github"
	"github.com/commonly/runtime/shared/tools/pod"
)

// TestNamesAreTheTools: the names a deployment without a backend or a
// broker keeps in its catalog (tools.Unconfigured) are exactly the
// tools' own, in their order.
func TestNamesAreTheTools(t *testing.T) {
	pc, err := pod.New(pod.Config{BaseURL: "http://commonly.test", Tokens: noTokens{}})
	if err != nil {
		t.Fatal(err)
	}
	gh, err := github.New(github.Config{Tokens: noTokens{}})
	if err != nil {
		t.Fatal(err)
	}
	for pkg, c := range map[string]struct {
		names []string
		tools []tools.Tool
	}{"pod": {pod.Names, pc.Tools()}, "github": {github.Names, gh.Tools()}} {
		var specs []string
		for _, tool := range c.tools {
			specs = append(specs, tool.Spec().Name)
		}
		if !slices.Equal(specs, c.names) {
			t.Errorf("%s.Names = %v, its tools are %v", pkg, c.names, specs)
		}
	}
}
