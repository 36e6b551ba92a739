package lint_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/lint"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// BenchmarkPolicy lints a shared policy against a service of 1,000
// tools: 20 roles of 10 rules for the service's routes, 10 for another
// service's, one values-only rule and one deny each.
func BenchmarkPolicy(b *testing.B) {
	reg := registry.New[struct{}]()
	for i := range 1000 {
		reg.Register(tool.Tool[struct{}]{
			Name: fmt.Sprintf("tool_%d", i), Description: "A tool.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly, Handler: tool.Handle(handle),
			VisibilityRoutes: []tool.Route{catalog(http.MethodGet, fmt.Sprintf("/api/v1/r%d/{id}/parts/{part}", i))},
		})
	}
	var roles []authz.RolePolicy
	for r := range 20 {
		var aps []authz.AccessPolicy
		for j := range 10 {
			aps = append(aps,
				authz.AccessPolicy{Path: fmt.Sprintf("^/catalog/api/v1/r%d/[^/]+/parts/[^/]+$", r*10+j), Methods: []string{"GET"}, Effect: authz.Allow},
				authz.AccessPolicy{Path: fmt.Sprintf("^/orders/api/v1/o%d(/[^/]+)?$", r*10+j), Methods: []string{"GET"}, Effect: authz.Allow})
		}
		aps = append(aps,
			authz.AccessPolicy{Path: fmt.Sprintf("^/catalog/api/v1/r%d/itm-[0-9]+/parts/[^/]+$", 500+r), Methods: []string{"GET"}, Effect: authz.Allow},
			authz.AccessPolicy{Path: fmt.Sprintf("^/catalog/api/v1/r%d/admin/parts/[^/]+$", r*10), Methods: []string{"GET"}, Effect: authz.Deny})
		roles = append(roles, authz.RolePolicy{Role: fmt.Sprintf("role_%d", r), AccessPolicies: aps})
	}
	table := reg.Table()
	var fs []lint.Finding
	for b.Loop() {
		fs = lint.Policy(table, roles)
	}
	if len(fs) != 20 {
		b.Fatalf("%d findings, want 20 (one values-only rule per role)", len(fs))
	}
}

// BenchmarkPolicyExample lints example-service's policy against its
// tools: what a service pays at start.
func BenchmarkPolicyExample(b *testing.B) {
	data, err := os.ReadFile("../../example-service/policy.json")
	if err != nil {
		b.Fatal(err)
	}
	var roles []authz.RolePolicy
	if err := json.Unmarshal(data, &roles); err != nil {
		b.Fatal(err)
	}
	table := catalogTable(b)
	for b.Loop() {
		if fs := lint.Policy(table, roles); len(fs) != 0 {
			b.Fatal(fs)
		}
	}
}
