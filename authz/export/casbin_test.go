package export_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/casbin/casbin/v2"
	"github.com/casbin/casbin/v2/model"
	stringadapter "github.com/casbin/casbin/v2/persist/string-adapter"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
)

// newCasbin builds a Casbin enforcer from the exported model and policy.
func newCasbin(tb testing.TB, f *fixture) *casbin.Enforcer {
	tb.Helper()
	var buf bytes.Buffer
	if err := f.exp.Casbin(&buf); err != nil {
		tb.Fatal(err)
	}
	var out struct{ Model, Policy string }
	dec := json.NewDecoder(&buf)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		tb.Fatal(err)
	}
	m, err := model.NewModelFromString(out.Model)
	if err != nil {
		tb.Fatalf("%s: Casbin refuses the model: %v", f.name, err)
	}
	enf, err := casbin.NewEnforcer(m, stringadapter.NewAdapter(out.Policy))
	if err != nil {
		tb.Fatalf("%s: Casbin refuses the policy: %v\n%s", f.name, err, out.Policy)
	}
	// Every line was loaded (the string adapter skips a line it cannot
	// parse).
	pol, err := enf.GetPolicy()
	if err != nil {
		tb.Fatal(err)
	}
	if lines := strings.Count(out.Policy, "\n"); len(pol) != lines {
		tb.Fatalf("%s: Casbin loaded %d policy lines of %d", f.name, len(pol), lines)
	}
	return enf
}

// casbinDecide enforces once per role: a caller is allowed if one of its
// roles is.
func casbinDecide(tb testing.TB, enf *casbin.Enforcer, roles []string, method, path string) bool {
	for _, r := range roles {
		ok, err := enf.Enforce(r, path, method)
		if err != nil {
			tb.Fatalf("Casbin: Enforce(%q, %q, %q): %v", r, path, method, err)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestCasbinDifferential: Casbin's enforcer, built from the exported
// model and policy, decides every role × route and 10,000 random probes
// exactly as authz.Policy does.
func TestCasbinDifferential(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			enf := newCasbin(t, f)
			routes := f.routes()
			for _, role := range f.roleNames() {
				for _, r := range routes {
					set := []string{role}
					if got, want := casbinDecide(t, enf, set, r.Method, r.URI), f.allows(set, r.Method, r.URI); got != want {
						t.Errorf("role %q, %s: Casbin %v, Policy %v", role, r, got, want)
					}
				}
			}
			f.runProbes(t, 2, "Casbin", func(_ *rand.Rand, p probe) (bool, bool) {
				return casbinDecide(t, enf, p.roles, p.method, p.path), f.allows(p.roles, p.method, p.path)
			})
		})
	}
}

// TestCasbinRefusesLineBreaks: a regexp holding a line break cannot be
// carried by Casbin's line-based policy text; the export says so rather
// than write a policy Casbin would read otherwise.
func TestCasbinRefusesLineBreaks(t *testing.T) {
	e := newExporter(t, registry.RouteTable{}, []authz.RolePolicy{{Role: "r", AccessPolicies: []authz.AccessPolicy{
		{Path: "^/a\n|^/b$", Methods: []string{"GET"}, Effect: authz.Allow}}}})
	err := e.Casbin(new(bytes.Buffer))
	if err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("Casbin: %v, want a refusal naming the line break", err)
	}
}
