package connector_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/sluicehq/sluice"

// goList runs go list -f format over the packages and returns its lines.
func goList(t *testing.T, format string, pkgs ...string) []string {
	t.Helper()
	args := append([]string{"list", "-f", format}, pkgs...)
	out, err := exec.Command("go", args...).Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, stderr)
	}
	return strings.Fields(string(out))
}

// TestRateLimitBoundary holds rate limiting to one home (docs/ratelimit.md,
// "Layout"): a connector knows of limiting only the contract
// (ratelimit/permit), which imports nothing of Sluice but the registry;
// the contract's types are declared there, not in connector; and the
// ledger's arithmetic (ratelimit/ledger) is pure: no Temporal, nothing of
// ratelimit but the contract (its Priority).
func TestRateLimitBoundary(t *testing.T) {
	const contract = module + "/ratelimit/permit"
	deps := goList(t, "{{join .Deps \"\\n\"}}", module+"/connector", module+"/connector/all")
	for _, d := range deps {
		if strings.HasPrefix(d, module+"/ratelimit") && d != contract {
			t.Errorf("connector depends on %s: a connector may know only the contract %s", d, contract)
		}
	}
	if !slices.Contains(deps, contract) {
		t.Errorf("connector does not depend on the contract %s: where do its Call and Permit come from?", contract)
	}

	for _, imp := range goList(t, "{{join .Imports \"\\n\"}}", contract) {
		if strings.HasPrefix(imp, module+"/") && imp != module+"/registry" {
			t.Errorf("the contract %s imports %s: it may import only the registry and the standard library", contract, imp)
		}
	}

	for _, d := range goList(t, "{{join .Deps \"\\n\"}}", module+"/ratelimit/ledger") {
		if strings.HasPrefix(d, "go.temporal.io/") || strings.HasPrefix(d, module+"/ratelimit") && d != contract {
			t.Errorf("the ledger package depends on %s: its arithmetic takes time as a parameter and knows no workflow, client or gate", d)
		}
	}

	// The contract's types live in the contract, not in connector.
	moved := []string{"Call", "Permit", "Priority", "SendTracker", "Observation", "Remaining", "Limiter"}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok {
				continue
			}
			for _, spec := range g.Specs {
				switch s := spec.(type) {
				case *ast.TypeSpec:
					if slices.Contains(moved, s.Name.Name) {
						t.Errorf("%s declares type %s: it belongs to the contract %s", name, s.Name.Name, contract)
					}
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.Name == "CallData" || n.Name == "CallToken" || strings.HasPrefix(n.Name, "Priority") {
							t.Errorf("%s declares %s: it belongs to the contract %s", name, n.Name, contract)
						}
					}
				}
			}
		}
	}
}
