package export_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// A fixture is a registry's route table and role policies, with the real
// toolroute server over them: what the engines' decisions are held to.
type fixture struct {
	name   string
	table  registry.RouteTable
	roles  []authz.RolePolicy
	policy *authz.Policy
	exp    *export.Exporter
	server *mcp.Server
}

// fixtures are example-service (its tools and embedded policy) and a
// registry of two services under a policy that uses what the regexps
// allow: unanchored and case-folded regexps, alternations, deny within a
// role, role names a CSV or a Cedar string must quote.
func fixtures(t testing.TB) []*fixture {
	t.Helper()
	return []*fixture{
		newFixture(t, "example-service", tools.Registry.Table(), readPolicy(t, filepath.Join("..", "..", "example-service", "policy.json")),
			server.Install(tools.Registry, &tools.Deps{})),
		trickyFixture(t),
	}
}

func trickyFixture(t testing.TB) *fixture {
	reg := trickyRegistry()
	return newFixture(t, "tricky", reg.Table(), readPolicy(t, filepath.Join("testdata", "policy.json")), server.Install(reg, struct{}{}))
}

func readPolicy(t testing.TB, path string) []authz.RolePolicy {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var roles []authz.RolePolicy
	if err := json.Unmarshal(data, &roles); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return roles
}

func newFixture(t testing.TB, name string, table registry.RouteTable, roles []authz.RolePolicy, install server.Installer) *fixture {
	t.Helper()
	p, err := authz.NewPolicy(roles)
	if err != nil {
		t.Fatal(err)
	}
	e, err := export.New(table, roles)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Name: name, Authorizer: p}, install)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{name: name, table: table, roles: roles, policy: p, exp: e, server: s}
}

type empty struct{}

func noop(context.Context, struct{}, *mcp.CallToolRequest, empty) (empty, error) { return empty{}, nil }

// trickyRegistry registers tools on two services, a local one, and one
// no role of the tricky policy reaches.
func trickyRegistry() *registry.Registry[struct{}] {
	reg := registry.New[struct{}]()
	add := func(name, key string, routes ...tool.Route) {
		reg.Register(tool.Tool[struct{}]{
			Name: name, Description: "The " + name + " tool.", ServiceKey: key, VisibilityRoutes: routes,
			Local: key == "", Behaviour: behaviour.ReadOnly, Handler: tool.Handle(noop),
		})
	}
	cat := func(m, p string) tool.Route { return tool.ServiceRoute("catalog", m, p) }
	usr := func(m, p string) tool.Route { return tool.ServiceRoute("users", m, p) }
	add("list_items", "catalog", cat(http.MethodGet, "/api/v1/items"))
	add("get_item", "catalog", cat(http.MethodGet, "/api/v1/items/{id}"))
	add("create_item", "catalog", cat(http.MethodPost, "/api/v1/items"))
	add("put_item", "catalog", cat(http.MethodPut, "/api/v1/items/{id}"), cat(http.MethodGet, "/api/v1/items/{id}"))
	add("delete_item", "catalog", cat(http.MethodDelete, "/api/v1/items/{id}"))
	add("quote_item", "catalog", cat(http.MethodDelete, "/api/v1/items/it's"))
	add("reports", "catalog", cat(http.MethodGet, "/api/v1/reports"), cat(http.MethodHead, "/api/v1/reports"))
	add("get_person", "users", usr(http.MethodGet, "/api/v1/people/{pid}"))
	add("person_meta", "users", usr(http.MethodGet, "/api/v1/people/{pid}/.well-known"))
	add("secret", "users", usr(http.MethodGet, "/api/v1/secret"))
	add("tag_person", "users", usr(http.MethodPatch, "/api/v1/people/{pid}/tags/{tag}"))
	add("odd_chars", "users", usr(http.MethodGet, "/api/v1/x:y@z/$(1)+~!;a=b,c"))
	add("whoami", "")
	return reg
}

// roleNames returns the fixture's roles and one the policy does not know.
func (f *fixture) roleNames() []string {
	var out []string
	for _, rp := range f.roles {
		out = append(out, rp.Role)
	}
	return append(out, "ghost")
}

// roleSets returns every single role, no role, every pair, and all
// roles together.
func (f *fixture) roleSets() [][]string {
	names := f.roleNames()
	sets := [][]string{{}}
	for i, a := range names {
		sets = append(sets, []string{a})
		for _, b := range names[i+1:] {
			sets = append(sets, []string{a, b})
		}
	}
	return append(sets, names)
}

// allows is authz.Policy's decision for a caller with roles (and a
// subject: an authenticated caller).
func (f *fixture) allows(roles []string, method, path string) bool {
	return f.policy.Allow(context.Background(), authz.Caller{Subject: "probe", Roles: roles}, tool.Route{URI: path, Method: method}) == nil
}

// visible lists the tools a caller with roles sees, through a real
// client of the real server.
func (f *fixture) visible(t *testing.T, roles []string) []string {
	t.Helper()
	cs := servertest.Connect(t, f.server, &authz.Caller{Subject: "probe", Roles: roles}, servertest.Options{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("%s: tools/list as %q: %v", f.name, roles, err)
	}
	names := []string{}
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// routes returns the table's distinct routes.
func (f *fixture) routes() []tool.Route {
	var out []tool.Route
	for _, t := range f.table.Tools {
		for _, r := range t.Routes {
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// A probe is one (roles, method, escaped path) question.
type probe struct {
	roles        []string
	method, path string
}

// probeMethods are the methods probes use: every method a policy may
// name, and some it may not.
var probeMethods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE", "get", "PROPFIND", ""}

// segmentValues fill placeholders and replace segments: ordinary values,
// values the policies single out, traversal-shaped and percent-encoded
// ones, and values no request would carry.
var segmentValues = []string{
	"7", "itm-1", "42", "forbidden", "FORBIDDEN", "secret", "reports", "it's", "{id}", "{pid}", ".well-known",
	"..", ".", "%2e%2e", "%2E%2E", "..%2F", "%2F", "%2f", "a%2Fb", "%252F", "%5C", "..;x", "%2e%2e%2fadmin",
	"%C3%A9", "é", "%EF%BC%8F", "／", "a b", "%20", "tags", "people", "PEOPLE", "v2", "v123", "items", "",
	"x:y@z", "$(1)+~!*;a=b,c", "\x00", "\n", "%00", "*", "\\", "api",
}

// randomProbe draws a probe: a route of the table bound, mutated or
// concatenated with random segments, or a path of random segments; a
// random set of the fixture's roles (and unknown ones); a random method.
func (f *fixture) randomProbe(rng *rand.Rand, routes []tool.Route) probe {
	names := f.roleNames()
	var roles []string
	for _, r := range names {
		if rng.IntN(3) == 0 {
			roles = append(roles, r)
		}
	}
	pick := func() string { return segmentValues[rng.IntN(len(segmentValues))] }
	rt := routes[rng.IntN(len(routes))]
	method := rt.Method
	if rng.IntN(3) == 0 {
		method = probeMethods[rng.IntN(len(probeMethods))]
	}
	segs := strings.Split(rt.URI, "/")
	for i, s := range segs {
		if strings.HasPrefix(s, "{") && rng.IntN(8) != 0 {
			segs[i] = pick()
		}
	}
	switch rng.IntN(10) {
	case 0: // replace a segment
		segs[1+rng.IntN(len(segs)-1)] = pick()
	case 1: // add segments
		for range 1 + rng.IntN(2) {
			segs = append(segs, pick())
		}
	case 2: // drop the last segment
		segs = segs[:len(segs)-1]
	case 3: // climb: "/../" somewhere
		i := 1 + rng.IntN(len(segs)-1)
		segs = slices.Insert(segs, i, "..")
	case 4: // a random path
		segs = []string{""}
		for range 1 + rng.IntN(6) {
			segs = append(segs, pick())
		}
	case 5: // case, slashes
		p := strings.Join(segs, "/")
		switch rng.IntN(3) {
		case 0:
			p = strings.ToUpper(p)
		case 1:
			p = "/" + p
		default:
			p += "/"
		}
		return probe{roles, method, p}
	}
	return probe{roles, method, strings.Join(segs, "/")}
}

func newExporter(tb testing.TB, table registry.RouteTable, roles []authz.RolePolicy) *export.Exporter {
	tb.Helper()
	e, err := export.New(table, roles)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// runProbes asks probes random probes (seeded) of engine and of
// toolroute, through answer, and fails the test where they differ. It
// also fails if toolroute allowed nearly all or nearly none: such probes
// would not tell the engines apart.
func (f *fixture) runProbes(t *testing.T, seed uint64, engine string, answer func(rng *rand.Rand, p probe) (got, want bool)) {
	t.Helper()
	routes := f.routes()
	rng := rand.New(rand.NewPCG(seed, uint64(len(f.name))))
	allowed := 0
	for range probes {
		p := f.randomProbe(rng, routes)
		got, want := answer(rng, p)
		if got != want {
			t.Errorf("probe %q %s %q: %s %v, toolroute %v", p.roles, p.method, p.path, engine, got, want)
		}
		if want {
			allowed++
		}
	}
	if allowed < probes/20 || allowed > probes*19/20 {
		t.Errorf("%d of %d probes allowed: the probes do not exercise both answers", allowed, probes)
	}
	t.Logf("%s: %d of %d probes allowed", engine, allowed, probes)
}

// probes is the number of random probes each engine answers per fixture.
const probes = 10_000
