package lint_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/lint"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type item struct {
	ID string `json:"id"`
}

func getItem(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in item) (item, error) {
	return in, nil
}

// A new user's policy: the rule names the ids the role may read, and so
// matches no route template. The server would start in silence and show
// the role no tool; the lint says why and how to fix it.
func ExamplePolicy() {
	reg := registry.New[struct{}]()
	reg.Register(tool.Tool[struct{}]{
		Name:             "get_item",
		Description:      "Fetch one catalog item by its id.",
		ServiceKey:       "catalog",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(getItem),
	})
	var roles []authz.RolePolicy
	err := json.Unmarshal([]byte(`[{"role": "viewer", "accessPolicies": [
		{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["GET"], "effect": "allow"}
	]}]`), &roles)
	if err != nil {
		panic(err)
	}
	for _, f := range lint.Policy(reg.Table(), roles) {
		fmt.Printf("%s (role %q, rule %d):\n%s\n\n", f.Kind, f.Role, f.Rule, f.Message)
	}

	// The fix: a segment that matches the template and every id.
	roles[0].AccessPolicies[0].Path = "^/catalog/api/v1/items/[^/]+$"
	fmt.Println("after the fix:", len(lint.Policy(reg.Table(), roles)), "findings")
	// Output:
	// no-tools (role "viewer", rule -1):
	// role "viewer": reaches no route of any tool, so a caller with only this role sees no tool but the local ones. The tools' routes are GET /catalog/api/v1/items/{id}; an allow rule must match a route's template as written, placeholders included (a segment [^/]+ matches both the template and its values: "^/catalog/api/v1/items/[^/]+$")
	//
	// values-only (role "viewer", rule 0):
	// role "viewer", accessPolicies[0] (allow GET "^/catalog/api/v1/items/itm-[0-9]+$"): matches request paths such as "/catalog/api/v1/items/itm-0" of GET /catalog/api/v1/items/{id} (tool get_item) but no route template, so it shows no tool: tools are shown by their templates, "{id}" as written, and each request is checked against its concrete path. Match the segment with [^/]+ ("^/catalog/api/v1/items/[^/]+$" matches the template and every value of {id}), or, to allow only such values, add an allow rule for the template itself ("^/catalog/api/v1/items/\\{id\\}$": request paths are escaped, "{" is sent as %7B, so it matches no request)
	//
	// after the fix: 0 findings
}
