package shared_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/commonly/runtime/"

// listed is what `go list -json` says of a package.
type listed struct {
	ImportPath, Name                   string
	Imports, TestImports, XTestImports []string
}

func goList(t *testing.T, args ...string) []listed {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Name,Imports,TestImports,XTestImports"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list %v: %v\n%s", args, err, stderr.String())
	}
	var pkgs []listed
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatalf("go list %v listed nothing", args)
	}
	return pkgs
}

// forbiddenInProduction are the trees no production package under
// shared/ imports (package doc).
var forbiddenInProduction = append([]string{
	module + "functions/", module + "infra/", module + "bench/", module + "api",
	"github.com/aws/aws-lambda-go/",
}, testServers...)

// forbiddenInTests are the trees nothing under shared/, tests included,
// imports, directly or through what it imports.
var forbiddenInTests = []string{module + "functions/", module + "infra/", module + "bench/"}

// testServers are the packages outside infra/ that stand in for AWS in the
// domain's tests: the embedded DynamoDB and the recorder of AWS calls it
// serves through. No production code links them.
var testServers = []string{module + "internal/dynamodblocal", module + "internal/awscalls"}

// adapters are the concrete adapters under shared/: the functions wire
// them; another production package imports one only where allowed.
var adapters = []string{
	module + "shared/store",
	module + "shared/sandbox/e2b",
	module + "shared/sandbox/local",
	module + "shared/llm/offline",
	module + "shared/secrets",
	module + "shared/engine/durableobject",
	module + "shared/engine/native",
	module + "shared/dispatch",
}

// adapterUses are the production edges to an adapter, each with why the
// importer uses it (not only for a `var _` check). None today: the
// reaper reads E2B and the local provider through sandbox.Inventory.
var adapterUses = map[string]string{}

// testsMayImport are the trees tests (external _test packages) and
// test-support packages under shared/ may import beyond shared/ itself.
var testsMayImport = map[string]string{
	module + "internal/dynamodblocal": "the embedded DynamoDB: the domain's integration tests run the real store on it",
	module + "internal/awscalls":      "the AWS calls the embedded DynamoDB served, counted by the reaper's sweep benchmark",
	"github.com/aws/aws-lambda-go/":   "the event types of the embedded DynamoDB's stream mapping (ledgertest feeds the ledger from it)",
}

func short(p string) string { return strings.TrimPrefix(p, module) }

func isTestSupport(p listed) bool { return strings.HasSuffix(p.Name, "test") }

func under(path string, trees []string) bool {
	return slices.ContainsFunc(trees, func(tree string) bool {
		return path == strings.TrimSuffix(tree, "/") || strings.HasPrefix(path, tree)
	})
}

func isTestSupportPath(path string, byPath map[string]listed) bool {
	p, ok := byPath[path]
	return ok && isTestSupport(p)
}

func TestTheDomainImportsNoAdapterItDoesNotUse(t *testing.T) {
	pkgs := goList(t, "./...")
	byPath := map[string]listed{}
	for _, p := range pkgs {
		byPath[p.ImportPath] = p
	}
	var production []string
	for _, p := range pkgs {
		if isTestSupport(p) {
			continue
		}
		production = append(production, p.ImportPath)
		for _, imp := range p.Imports {
			switch {
			case under(imp, forbiddenInProduction):
				t.Errorf("%s imports %s: the domain imports no function, stand-in, benchmark, API document or Lambda package", short(p.ImportPath), short(imp))
			case isTestSupportPath(imp, byPath):
				t.Errorf("%s imports the test-support package %s", short(p.ImportPath), short(imp))
			case slices.Contains(adapters, imp):
				if _, ok := adapterUses[short(p.ImportPath)+" -> "+short(imp)]; !ok {
					t.Errorf("%s imports the adapter %s: the functions wire adapters; a `var _` check stands beside the adapter (or allow the edge in adapterUses, saying what it uses)", short(p.ImportPath), short(imp))
				}
			}
		}
	}
	for edge := range adapterUses {
		from, to, _ := strings.Cut(edge, " -> ")
		if !slices.Contains(byPath[module+from].Imports, module+to) {
			t.Errorf("adapterUses allows %s, which no longer exists: remove it", edge)
		}
	}

	// The whole production graph, transitively: what `go list -deps
	// ./shared/...` shows of the domain's own packages.
	for _, dep := range goList(t, append([]string{"-deps"}, production...)...) {
		if under(dep.ImportPath, forbiddenInProduction) {
			t.Errorf("the domain depends on %s", short(dep.ImportPath))
		}
	}
}

func TestDomainTestsImportNoFunction(t *testing.T) {
	for _, p := range goList(t, "./...") {
		check := func(kind string, imports []string, standIns bool) {
			for _, imp := range imports {
				if !strings.HasPrefix(imp, module) && !strings.HasPrefix(imp, "github.com/aws/aws-lambda-go/") {
					continue
				}
				if strings.HasPrefix(imp, module+"shared/") {
					continue
				}
				allowed := false
				for tree := range testsMayImport {
					allowed = allowed || strings.HasPrefix(imp, tree)
				}
				if !allowed || !standIns {
					t.Errorf("%s's %s imports %s: the domain's tests import no function, stand-in under infra/, benchmark or CDK code; the embedded DynamoDB only from external tests and test-support packages", short(p.ImportPath), kind, short(imp))
				}
			}
		}
		if isTestSupport(p) {
			check("test-support package", p.Imports, true)
		}
		check("internal tests", p.TestImports, false)
		check("external tests", p.XTestImports, true)
	}
}

// Nothing under shared/, tests included, depends on a function, the
// infrastructure or the benchmarks, even through the test servers it uses.
func TestDomainTestsDependOnNoInfrastructure(t *testing.T) {
	for _, dep := range goList(t, "-deps", "-test", "./...") {
		if under(dep.ImportPath, forbiddenInTests) {
			t.Errorf("the domain's tests depend on %s", short(dep.ImportPath))
		}
	}
}

// The functions' bootstraps link no stand-in and no test double.
func TestNoBootstrapLinksAStandIn(t *testing.T) {
	deps := goList(t, "-deps", "../functions/turn", "../functions/alarm", "../functions/reaper")
	for _, d := range deps {
		if strings.HasPrefix(d.ImportPath, module+"infra/") || under(d.ImportPath, testServers) || (strings.HasPrefix(d.ImportPath, module) && isTestSupport(d)) {
			t.Errorf("a function's bootstrap links %s", short(d.ImportPath))
		}
	}
}
