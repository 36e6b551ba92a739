package vet_test

import (
	"testing"

	"golang.org/x/tools/go/analysis/analysistest"

	"github.com/toolroute/toolroute/registry/vet"
)

// TestAnalyzer runs the analyzer over testdata, a module of its own that
// requires this one through a replace: the packages are checked against
// the real registry, tool and behaviour, not stubs of them. svc exports
// its routes as facts; bad breaks every rule, over several files; clean
// breaks none; runtime builds its values at run time, and must get no
// diagnostic.
func TestAnalyzer(t *testing.T) {
	analysistest.Run(t, analysistest.TestData(), vet.Analyzer, "./svc", "./bad", "./clean", "./runtime")
}

// TestSuggestedFixes checks the fix of a method written in lower case:
// testdata/fix/fix.go.golden is the file with every fix applied (a method in a
// tool.Route literal, a tool.ServiceRoute call, a constructor of the
// package and one of another package, known through a fact).
func TestSuggestedFixes(t *testing.T) {
	analysistest.RunWithSuggestedFixes(t, analysistest.TestData(), vet.Analyzer, "./fix")
}
