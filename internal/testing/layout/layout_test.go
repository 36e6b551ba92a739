package layout

import (
	"bytes"
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// listed is what `go list -json -deps=false` says of a package.
type listed struct {
	ImportPath   string
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
}

// modulePackages lists the module's packages with the go command.
func modulePackages(t *testing.T) ([]Package, map[string][]string) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	out, err := exec.Command("go", "list", "-json", Module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []Package
	deps := map[string][]string{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, Package{Path: l.ImportPath, Imports: l.Imports, TestImports: append(l.TestImports, l.XTestImports...)})
		deps[l.ImportPath] = l.Deps
	}
	if len(pkgs) < 10 {
		t.Fatalf("go list found %d packages", len(pkgs))
	}
	return pkgs, deps
}

// TestModuleLayout: the module's own import graph breaks no rule.
func TestModuleLayout(t *testing.T) {
	pkgs, deps := modulePackages(t)
	for _, line := range Rules(pkgs, deps) {
		t.Error(line)
	}
}

// TestRulesRefuseEachArrow: every forbidden arrow, added to a graph that
// passes, is reported (and nothing else is).
func TestRulesRefuseEachArrow(t *testing.T) {
	m := func(p string) string { return Module + "/" + p }
	base := func() ([]Package, map[string][]string) {
		return []Package{
				{Path: m("tool"), Imports: []string{"net/http"}, TestImports: []string{m("internal/testing/golden")}},
				{Path: m("registry"), Imports: []string{m("tool"), m("internal/core/call")}},
				{Path: m("server"), Imports: []string{m("registry"), m("authz"), "go.uber.org/fx"}, TestImports: []string{"go.uber.org/fx/fxtest"}},
				{Path: m("example-service"), Imports: []string{m("server"), "go.uber.org/fx"}, TestImports: []string{m("internal/testing/redistest")}},
				{Path: m("internal/testing/golden"), Imports: []string{m("internal/testing/syncbuf")}},
			}, map[string][]string{
				m("registry"): {m("tool"), m("internal/core/call")},
				m("server"):   {m("registry"), m("authz"), "go.uber.org/fx"},
			}
	}
	if got := Rules(base()); len(got) != 0 {
		t.Fatalf("the base graph breaks rules: %q", got)
	}
	for _, c := range []struct {
		name   string
		change func([]Package, map[string][]string) []Package
		want   string
	}{
		{"production code imports test support", func(p []Package, _ map[string][]string) []Package {
			p[0].Imports = append(p[0].Imports, m("internal/testing/golden"))
			return p
		}, "tool imports test support internal/testing/golden"},
		{"example-service imports internal", func(p []Package, _ map[string][]string) []Package {
			return append(p, Package{Path: m("example-service/catalog"), Imports: []string{m("internal/core/truncate")}})
		}, "example-service/catalog imports internal/core/truncate"},
		{"example-service's tests import a non-test internal package", func(p []Package, _ map[string][]string) []Package {
			p[3].TestImports = append(p[3].TestImports, m("internal/serve/inflight"))
			return p
		}, "example-service's tests import internal/serve/inflight"},
		{"registry depends on authz", func(p []Package, d map[string][]string) []Package {
			d[m("registry")] = append(d[m("registry")], m("authz/export"))
			return p
		}, "registry depends on authz/export"},
		{"another package imports fx", func(p []Package, _ map[string][]string) []Package {
			p[1].Imports = append(p[1].Imports, "go.uber.org/fx")
			return p
		}, "registry imports go.uber.org/fx"},
		{"another package's tests import fx", func(p []Package, _ map[string][]string) []Package {
			p[0].TestImports = append(p[0].TestImports, "go.uber.org/fx/fxtest")
			return p
		}, "tool's tests import go.uber.org/fx/fxtest"},
		{"the core links an optional capability", func(p []Package, d map[string][]string) []Package {
			d[m("server")] = append(d[m("server")], "github.com/redis/go-redis/v9")
			return p
		}, "server depends on github.com/redis/go-redis/v9"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, d := base()
			got := Rules(c.change(p, d), d)
			if len(got) != 1 || !strings.HasPrefix(got[0], c.want) {
				t.Errorf("Rules = %q, want one line starting %q", got, c.want)
			}
		})
	}
}
