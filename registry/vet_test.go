package registry_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/checker"
	"golang.org/x/tools/go/packages"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/registry/vet"
)

// vetBase are the fields of mapped() and local() as source.
var vetBase = map[bool][]string{
	false: {
		`Name: "get_item"`,
		`Description: "Fetch one catalog item by its id."`,
		`ServiceKey: "catalog"`,
		`VisibilityRoutes: []tool.Route{catalog(http.MethodGet, "/api/v1/items/{id}")}`,
		`Behaviour: behaviour.ReadOnly`,
		`Handler: tool.Handle(getItem)`,
	},
	true: {
		`Name: "server_info"`,
		`Description: "Describe this server."`,
		`Local: true`,
		`Behaviour: behaviour.ReadOnly`,
		`Handler: tool.Handle(getItem)`,
	},
}

// vetDecls are the declarations of this file's package the cases use,
// in the generated package (named registry_test too, so that types are
// spelled alike in both messages).
const vetDecls = `package registry_test

import (
	"context"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

type Deps struct{ Items map[string]string }

func (*Deps) Upstream(string) (string, *http.Client) { return "", nil }

type getItemArgs struct {
	ID string ` + "`json:\"id\" jsonschema:\"minLength=1,description=the item's id\"`" + `
}

type Item struct {
	ID   string ` + "`json:\"id\"`" + `
	Name string ` + "`json:\"name\"`" + `
}

func getItem(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in getItemArgs) (Item, error) {
	return Item{}, fmt.Errorf("no item %q", in.ID)
}

type badPatternArgs struct {
	Code string ` + "`json:\"code\" jsonschema:\"pattern=(unclosed\"`" + `
}

type treeResult struct {
	Children []treeResult ` + "`json:\"children\"`" + `
}

func catalog(method, path string) tool.Route { return tool.ServiceRoute("catalog", method, path) }

const long = "` + longName + `"

var _ = http.MethodGet
var _ = behaviour.ReadOnly
`

// vetSource returns the source of the literal of tc's tool: the base
// literal with src's fields in place of those of their names.
func vetSource(tc checkCase) string {
	fields := slices.Clone(vetBase[tc.local])
	for line := range strings.SplitSeq(tc.src, "\n") {
		if line == "" {
			continue
		}
		key, _, _ := strings.Cut(line, ":")
		i := slices.IndexFunc(fields, func(f string) bool { return strings.HasPrefix(f, key+":") })
		if i < 0 {
			fields = append(fields, line)
		} else {
			fields[i] = line
		}
	}
	return "tool.Tool[*Deps]{\n\t\t" + strings.Join(fields, ",\n\t\t") + ",\n\t}"
}

// TestCheckVet holds registry/vet to Check: every case of Check's table
// is declared once in Go (mutate) and once as source (src); Check's
// rules for the one and the analyzer's diagnostics for the other must be
// the same texts, but for the rules the source does not show
// (runtimeOnly), of which the analyzer must say nothing.
func TestCheckVet(t *testing.T) {
	if testing.Short() {
		t.Skip("loads a generated package with go/packages")
	}
	cases := checkCases()
	dir := t.TempDir()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	// The testdata module of registry/vet requires this module and
	// what its packages import; its go.sum has their sums.
	mod, err := os.ReadFile(filepath.Join(root, "registry/vet/testdata/go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mod = regexp.MustCompile(`(?m)^replace .*$`).ReplaceAll(mod, []byte("replace github.com/toolroute/toolroute => "+root))
	sum, err := os.ReadFile(filepath.Join(root, "registry/vet/testdata/go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	write := func(name string, data []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", mod)
	write("go.sum", sum)
	write("decls.go", []byte(vetDecls))
	for i, tc := range cases {
		src := fmt.Sprintf(`package registry_test

import (
	"context"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

var _ context.Context
var _ *mcp.CallToolRequest
var _ upstream.Endpoints
var _ = http.MethodGet
var _ = behaviour.ReadOnly
var _ = time.Second

var r%[1]d = registry.New[*Deps]()

func init() {
	r%[1]d.Register(%[2]s)
}
`, i, vetSource(tc))
		write(fmt.Sprintf("case%03d.go", i), []byte(src))
	}

	pkgs, err := packages.Load(&packages.Config{
		Mode: packages.LoadAllSyntax,
		Dir:  dir,
		Env:  append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly"),
	}, ".")
	if err != nil {
		t.Fatal(err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the generated package does not load")
	}
	graph, err := checker.Analyze([]*analysis.Analyzer{vet.Analyzer}, pkgs, nil)
	if err != nil {
		t.Fatal(err)
	}
	got := make([][]string, len(cases)) // the analyzer's texts, by case
	for _, act := range graph.Roots {
		if act.Err != nil {
			t.Fatal(act.Err)
		}
		for _, d := range act.Diagnostics {
			file := filepath.Base(act.Package.Fset.Position(d.Pos).Filename)
			var i int
			if _, err := fmt.Sscanf(file, "case%03d.go", &i); err != nil {
				t.Fatalf("diagnostic in %s: %s", file, d.Message)
			}
			got[i] = append(got[i], d.Message)
		}
	}

	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tl := mapped()
			if tc.local {
				tl = local()
			}
			tc.mutate(&tl)
			err, site := checkAt(registry.New[*Deps](), tl)
			var want []string
			if err != nil && !tc.runtimeOnly {
				prefix := fmt.Sprintf("registry: tool %q (registered at %s): ", tl.Name, site)
				for line := range strings.SplitSeq(err.Error(), "\n") {
					rule, ok := strings.CutPrefix(line, prefix)
					if !ok { // a rule of several lines (a handler's input and output)
						want[len(want)-1] += "\n" + line
						continue
					}
					want = append(want, rule)
				}
			}
			if tc.runtimeOnly && err == nil {
				t.Errorf("Check = nil for a case marked runtimeOnly")
			}
			if diff := cmp.Diff(want, got[i]); diff != "" {
				t.Errorf("the analyzer's diagnostics differ from Check's rules (-Check +vet):\n%s\nsource:\n%s", diff, vetSource(tc))
			}
		})
	}
}
