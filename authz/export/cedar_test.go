package export_test

import (
	"bytes"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/tool"
)

// cedarEngine is the exported policy set, parsed by cedar-go.
type cedarEngine struct {
	ps *cedar.PolicySet
}

func newCedar(tb testing.TB, f *fixture) *cedarEngine {
	tb.Helper()
	var buf bytes.Buffer
	if err := f.exp.Cedar(&buf); err != nil {
		tb.Fatal(err)
	}
	ps, err := cedar.NewPolicySetFromBytes("toolroute.cedar", buf.Bytes())
	if err != nil {
		tb.Fatalf("%s: cedar-go refuses the policies: %v\n%s", f.name, err, buf.String())
	}
	return &cedarEngine{ps: ps}
}

// decide asks whether User::"probe", a member of roles, may do action
// on resource.
func (c *cedarEngine) decide(roles []string, action, resourceType, resource string) bool {
	user := cedar.NewEntityUID("User", "probe")
	parents := make([]cedar.EntityUID, len(roles))
	for i, r := range roles {
		parents[i] = cedar.NewEntityUID("Role", cedar.String(r))
	}
	entities := cedar.EntityMap{user: {UID: user, Parents: cedar.NewEntityUIDSet(parents...)}}
	for _, p := range parents {
		entities[p] = cedar.Entity{UID: p}
	}
	d, _ := cedar.Authorize(c.ps, entities, cedar.Request{
		Principal: user,
		Action:    cedar.NewEntityUID("Action", cedar.String(action)),
		Resource:  cedar.NewEntityUID(cedar.EntityType(resourceType), cedar.String(resource)),
		Context:   cedar.NewRecord(nil),
	})
	return d == cedar.Allow
}

func (c *cedarEngine) visible(f *fixture, roles []string) []string {
	names := []string{}
	for _, t := range f.table.Tools {
		if c.decide(roles, "call_tool", "Tool", t.Name) {
			names = append(names, t.Name)
		}
	}
	slices.Sort(names)
	return names
}

// TestCedarDifferential: cedar-go, evaluating the exported policies,
// permits call_tool on exactly the tools a real client of the real server
// lists, and METHOD on exactly the route templates authz.Policy allows,
// for every role set; for 10,000 random (role set, action, resource)
// probes it agrees with toolroute, and it denies every route outside
// the table (a concrete path, a mutated template).
func TestCedarDifferential(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			c := newCedar(t, f)
			routes := f.routes()
			for _, set := range f.roleSets() {
				if diff := cmp.Diff(f.visible(t, set), c.visible(f, set)); diff != "" {
					t.Errorf("roles %q: call_tool (-toolroute +Cedar):\n%s", set, diff)
				}
				for _, r := range routes {
					if got, want := c.decide(set, r.Method, "Route", r.URI), f.allows(set, r.Method, r.URI); got != want {
						t.Errorf("roles %q, %s: Cedar %v, Policy %v", set, r, got, want)
					}
				}
			}
			f.runProbes(t, 3, "Cedar", func(rng *rand.Rand, p probe) (got, want bool) {
				switch rng.IntN(3) {
				case 0: // a tool
					tl := f.table.Tools[rng.IntN(len(f.table.Tools))]
					want = tl.Local || slices.ContainsFunc(tl.Routes, func(r tool.Route) bool { return f.allows(p.roles, r.Method, r.URI) })
					return c.decide(p.roles, "call_tool", "Tool", tl.Name), want
				case 1: // a route of the table
					r := routes[rng.IntN(len(routes))]
					return c.decide(p.roles, r.Method, "Route", r.URI), f.allows(p.roles, r.Method, r.URI)
				}
				// The probe's route: denied outside the table.
				inTable := slices.Contains(routes, tool.Route{URI: p.path, Method: p.method})
				return c.decide(p.roles, p.method, "Route", p.path), inTable && f.allows(p.roles, p.method, p.path)
			})
		})
	}
}
