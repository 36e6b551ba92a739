package layout

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"slices"
	"strings"
)

// Module is the module's path.
const Module = "github.com/toolroute/toolroute"

// Package is one package of the module as the rules see it: its path,
// what its non-test files import, and what its test files import besides.
type Package struct {
	Path        string
	Imports     []string // of its non-test files
	TestImports []string // of its test files (internal and external)
}

// leanCore are the packages a service that uses only the core links: none
// of [optional] may be among their dependencies.
var leanCore = []string{"server", "registry", "tool", "authz", "behaviour"}

// optional are the module paths of capabilities that live in packages of
// their own, so that the core links none of them.
var optional = []string{
	"github.com/zitadel/", "github.com/golang-jwt/", "github.com/go-jose/",
	"go.opentelemetry.io/", "github.com/prometheus/",
	"github.com/redis/", "github.com/go-redis/",
	"github.com/open-policy-agent/", "github.com/cedar-policy/", "github.com/casbin/",
	"github.com/getkin/", "golang.org/x/tools/",
}

// fxUsers may import go.uber.org/fx: the server's module, telemetry's,
// and the examples (services are assembled with fx).
var fxUsers = []string{"server", "server/telemetry", "service", "example-service"}

// rel is p's path inside the module ("" for the module's root).
func rel(p string) string {
	return strings.TrimPrefix(strings.TrimPrefix(p, Module), "/")
}

// under reports whether the module path p is dir or below it.
func under(p, dir string) bool {
	r := rel(p)
	return r == dir || strings.HasPrefix(r, dir+"/")
}

// inModule reports whether p is a package of the module.
func inModule(p string) bool { return p == Module || strings.HasPrefix(p, Module+"/") }

// Rules checks pkgs (with deps, every package's transitive non-test
// dependencies) and returns a line per arrow the layout forbids:
//
//   - production code imports test support (internal/testing/...);
//   - example-service's code imports internal/ (a team copying it could
//     not compile it); its tests may use internal/testing/... only;
//   - registry depends on authz (the declaration core knows no
//     authorization);
//   - a package other than server, server/telemetry and the examples
//     imports go.uber.org/fx;
//   - the lean core (server, registry, tool, authz, behaviour) depends on
//     an optional capability's library (OAuth, OpenTelemetry, Redis, the
//     policy engines, kin-openapi, x/tools).
func Rules(pkgs []Package, deps map[string][]string) []string {
	var bad []string
	for _, p := range pkgs {
		r := rel(p.Path)
		for _, imp := range p.Imports {
			if inModule(imp) && under(imp, "internal/testing") && !under(p.Path, "internal/testing") {
				bad = append(bad, fmt.Sprintf("%s imports test support %s: only tests may", r, rel(imp)))
			}
			if under(p.Path, "example-service") && inModule(imp) && under(imp, "internal") {
				bad = append(bad, fmt.Sprintf("%s imports %s: example-service uses public packages only", r, rel(imp)))
			}
			if imp == "go.uber.org/fx" || strings.HasPrefix(imp, "go.uber.org/fx/") {
				if !slices.ContainsFunc(fxUsers, func(u string) bool { return under(p.Path, u) }) {
					bad = append(bad, fmt.Sprintf("%s imports %s: only %s do", r, imp, strings.Join(fxUsers, ", ")))
				}
			}
		}
		for _, imp := range p.TestImports {
			if under(p.Path, "example-service") && inModule(imp) && under(imp, "internal") && !under(imp, "internal/testing") {
				bad = append(bad, fmt.Sprintf("%s's tests import %s: example-service's tests use public packages and test support only", r, rel(imp)))
			}
			if (imp == "go.uber.org/fx" || strings.HasPrefix(imp, "go.uber.org/fx/")) &&
				!slices.ContainsFunc(fxUsers, func(u string) bool { return under(p.Path, u) }) {
				bad = append(bad, fmt.Sprintf("%s's tests import %s: only %s do", r, imp, strings.Join(fxUsers, ", ")))
			}
		}
	}
	for _, d := range deps[Module+"/registry"] {
		if inModule(d) && under(d, "authz") {
			bad = append(bad, fmt.Sprintf("registry depends on %s: the declaration core knows no authorization", rel(d)))
		}
	}
	for _, c := range leanCore {
		for _, d := range deps[Module+"/"+c] {
			if slices.ContainsFunc(optional, func(o string) bool { return strings.HasPrefix(d, o) }) {
				bad = append(bad, fmt.Sprintf("%s depends on %s: optional capabilities live in packages of their own", c, d))
			}
		}
	}
	slices.Sort(bad)
	return slices.Compact(bad)
}

// corePackages are the packages whose exported names [ExportedNames]
// counts for the core's surface.
var corePackages = []string{"behaviour", "tool", "registry", "authz", "authz/permission", "server", "server/servertest"}

// ExportedNames returns the exported names declared by the non-test Go
// files of the package in dir, sorted: every exported function, type,
// constant and variable, every exported method of an exported type (as
// "Type.Method"), and every exported field of an exported struct type
// (as "Type.Field", embedded ones by their type's name). Methods of
// interfaces are not counted: the interface is.
func ExportedNames(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if !d.Name.IsExported() {
						continue
					}
					if d.Recv == nil {
						names = append(names, d.Name.Name)
					} else if recv := typeName(d.Recv.List[0].Type); recv != "" && ast.IsExported(recv) {
						names = append(names, recv+"."+d.Name.Name)
					}
				case *ast.GenDecl:
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if !s.Name.IsExported() {
								continue
							}
							names = append(names, s.Name.Name)
							st, ok := s.Type.(*ast.StructType)
							if !ok {
								continue
							}
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										names = append(names, s.Name.Name+"."+n.Name)
									}
								}
								if len(fl.Names) == 0 {
									if n := typeName(fl.Type); ast.IsExported(n) {
										names = append(names, s.Name.Name+"."+n)
									}
								}
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names = append(names, n.Name)
								}
							}
						}
					}
				}
			}
		}
	}
	slices.Sort(names)
	return names, nil
}

// typeName is the name of the (possibly pointer, generic or qualified)
// type expression e, or "".
func typeName(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.SelectorExpr:
			return t.Sel.Name
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
