package lint_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/lint"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type idArgs struct {
	ID string `json:"id,omitempty"`
}

type result struct {
	OK bool `json:"ok"`
}

func handle(context.Context, struct{}, *mcp.CallToolRequest, idArgs) (result, error) {
	return result{OK: true}, nil
}

func catalog(method, path string) tool.Route { return tool.ServiceRoute("catalog", method, path) }

// catalogTable is the route table of a registry of example-service's
// catalog tools (example-service/tools): the same names, behaviours and
// routes, and a local tool.
func catalogTable(t testing.TB, extra ...tool.Tool[struct{}]) registry.RouteTable {
	t.Helper()
	reg := registry.New[struct{}]()
	var (
		list   = catalog(http.MethodGet, "/api/v1/items")
		get    = catalog(http.MethodGet, "/api/v1/items/{id}")
		create = catalog(http.MethodPost, "/api/v1/items")
		update = catalog(http.MethodPut, "/api/v1/items/{id}")
		del    = catalog(http.MethodDelete, "/api/v1/items/{id}")
	)
	for _, tl := range append([]tool.Tool[struct{}]{
		{Name: "list_items", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{list}, Behaviour: behaviour.ReadOnly},
		{Name: "get_item", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{get}, Behaviour: behaviour.ReadOnly},
		{Name: "audit_catalog", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{list, get}, Behaviour: behaviour.ReadOnly},
		{Name: "create_item", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{create}, Behaviour: behaviour.Additive},
		{Name: "update_item", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{update}, Behaviour: behaviour.Destructive, Idempotent: true},
		{Name: "delete_item", ServiceKey: "catalog", VisibilityRoutes: []tool.Route{del}, Behaviour: behaviour.Destructive, Idempotent: true},
		{Name: "whoami", Local: true, Behaviour: behaviour.ReadOnly},
	}, extra...) {
		tl.Description = "The " + tl.Name + " tool."
		tl.Handler = tool.Handle(handle)
		reg.Register(tl)
	}
	return reg.Table()
}

// decode decodes a policy as a service does: strictly, as JSON.
func decode(t *testing.T, policy string) []authz.RolePolicy {
	t.Helper()
	var roles []authz.RolePolicy
	dec := json.NewDecoder(strings.NewReader(policy))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&roles); err != nil {
		t.Fatalf("policy: %v", err)
	}
	return roles
}

// want is a finding the test expects: its kind, role and rule, and text
// its message must contain.
type want struct {
	Kind lint.Kind
	Role string
	Rule int
	Has  []string `cmp:"-"`
}

func check(t *testing.T, got []lint.Finding, wants []want) {
	t.Helper()
	var gotKeys, wantKeys []want
	for _, f := range got {
		gotKeys = append(gotKeys, want{Kind: f.Kind, Role: f.Role, Rule: f.Rule})
	}
	for _, w := range wants {
		wantKeys = append(wantKeys, want{Kind: w.Kind, Role: w.Role, Rule: w.Rule})
	}
	if diff := cmp.Diff(wantKeys, gotKeys); diff != "" {
		for _, f := range got {
			t.Log(f)
		}
		t.Fatalf("findings (-want +got):\n%s", diff)
	}
	for i, w := range wants {
		for _, s := range w.Has {
			if !strings.Contains(got[i].Message, s) {
				t.Errorf("finding %d's message lacks %q:\n%s", i, s, got[i].Message)
			}
		}
	}
}

// TestPolicy runs every check over policies a new user writes, against a
// real registry's table.
func TestPolicy(t *testing.T) {
	tests := []struct {
		name   string
		policy string
		want   []want
	}{{
		name: "a concrete id hides every tool",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["GET"], "effect": "allow"}]}]`,
		want: []want{
			{lint.NoTools, "viewer", -1, []string{
				`role "viewer": reaches no route of any tool`,
				"GET /catalog/api/v1/items, POST /catalog/api/v1/items, GET /catalog/api/v1/items/{id}",
				`"^/catalog/api/v1/items/[^/]+$"`,
			}},
			{lint.ValuesOnly, "viewer", 0, []string{
				`role "viewer", accessPolicies[0] (allow GET "^/catalog/api/v1/items/itm-[0-9]+$")`,
				`"/catalog/api/v1/items/itm-0"`,
				"GET /catalog/api/v1/items/{id} (tools audit_catalog, get_item)",
				`Match the segment with [^/]+ ("^/catalog/api/v1/items/[^/]+$"`,
				`"^/catalog/api/v1/items/\\{id\\}$"`,
			}},
		},
	}, {
		name: "a concrete id for another method",
		policy: `[{"role": "editor", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["PUT", "DELETE"], "effect": "allow"}]}]`,
		want: []want{{lint.ValuesOnly, "editor", 1, []string{
			`"/catalog/api/v1/items/itm-0" of PUT /catalog/api/v1/items/{id} (tool update_item)`,
			"and of DELETE /catalog/api/v1/items/{id} (tool delete_item)",
		}}},
	}, {
		name: "a concrete id beside a rule that shows the tool",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["GET"], "effect": "allow"}]}]`,
	}, {
		name: "the fix that keeps the restriction: a concrete id and the template itself",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/\\{id\\}$", "methods": ["GET"], "effect": "allow"}]}]`,
	}, {
		name: "the template written as the regexp",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/{id}$", "methods": ["GET", "PUT"], "effect": "allow"}]}]`,
		want: []want{{lint.TemplateOnly, "viewer", 1, []string{
			`accessPolicies[1] (allow GET,PUT "^/catalog/api/v1/items/{id}$")`,
			"GET /catalog/api/v1/items/{id} (tools audit_catalog, get_item)",
			`"/catalog/api/v1/items/a"`,
			"so are 1 more route(s), PUT /catalog/api/v1/items/{id} (tool update_item)",
			`"^/catalog/api/v1/items/[^/]+$"`,
		}}},
	}, {
		name: "methods authz refuses",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["get", "FETCH", "*"], "effect": "allow"}]}]`,
		want: []want{
			{lint.UnknownMethod, "viewer", 0, []string{`accessPolicies[0] (allow get,FETCH,*`, `method "get": write "GET"`}},
			{lint.UnknownMethod, "viewer", 0, []string{`method "FETCH" is no HTTP method authz accepts: use GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT or TRACE`}},
			{lint.UnknownMethod, "viewer", 0, []string{`method "*"`, "there is no wildcard"}},
		},
	}, {
		name: "a deny for a method no allow rule has",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/[^/]+$", "methods": ["DELETE"], "effect": "deny"}]}]`,
		want: []want{{lint.DeadDeny, "viewer", 1, []string{
			`accessPolicies[1] (deny DELETE "^/catalog/api/v1/items/[^/]+$"): denies nothing: no allow rule of the role applies to DELETE`,
			"matches requests of DELETE /catalog/api/v1/items/{id} (tool delete_item)",
		}}},
	}, {
		name: "a deny whose path is a typo",
		policy: `[{"role": "editor", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET", "PUT"], "effect": "allow"},
			{"path": "^/catalog/api/v1/item/[^/]+$", "methods": ["PUT"], "effect": "deny"}]}]`,
		want: []want{{lint.DeadDeny, "editor", 1, []string{
			"no allow rule of the role for PUT matches a path it matches",
			"matches no request of any tool (the routes for its methods: PUT /catalog/api/v1/items/{id} (tool update_item))",
		}}},
	}, {
		name: "denies that deny something",
		policy: `[{"role": "editor", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET", "PUT", "DELETE"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/itm-admin$", "methods": ["PUT", "DELETE"], "effect": "deny"},
			{"path": "^/catalog/api/v1/items/\\{id\\}$", "methods": ["DELETE"], "effect": "deny"}
		]}, {"role": "auditor", "accessPolicies": [
			{"path": "^/catalog/", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/admin(/.*)?$", "methods": ["GET"], "effect": "deny"}]}]`,
	}, {
		// The deny and the second allow rule have no path in common, but
		// the search gives up before it can tell: no claim is made.
		name: "a search that gives up claims nothing",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/[a-z]*a[a-z]{250}x$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/[a-z]*b[a-z]{250}y$", "methods": ["GET"], "effect": "deny"}]}]`,
	}, {
		name: "a role for another API version",
		policy: `[{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v2/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}]`,
		want: []want{{lint.NoTools, "viewer", -1, []string{
			"GET /catalog/api/v1/items, POST /catalog/api/v1/items, GET /catalog/api/v1/items/{id}, PUT /catalog/api/v1/items/{id}, DELETE /catalog/api/v1/items/{id}",
		}}},
	}, {
		name: "a role without allow rules",
		policy: `[{"role": "guest", "accessPolicies": []},
			{"role": "banned", "accessPolicies": [{"path": "^/catalog/", "methods": ["GET"], "effect": "deny"}]}]`,
		want: []want{
			{lint.NoTools, "guest", -1, []string{"it has no allow rule"}},
			{lint.NoTools, "banned", -1, []string{"it has no allow rule"}},
			{lint.DeadDeny, "banned", 0, []string{"no allow rule of the role applies to GET"}},
		},
	}, {
		name: "a shared policy: roles and rules of another service",
		policy: `[{"role": "orders-viewer", "accessPolicies": [
			{"path": "^/orders/api/v1/orders(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/orders/api/v1/orders/secret$", "methods": ["GET"], "effect": "deny"}
		]}, {"role": "viewer", "accessPolicies": [
			{"path": "^/orders/api/v1/orders(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}]`,
	}, {
		name: "what authz refuses besides methods, all at once",
		policy: `[{"role": "", "accessPolicies": []},
			{"role": "viewer", "accessPolicies": [
				{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "Allow"},
				{"path": "", "methods": ["GET"], "effect": "allow"},
				{"path": "^/catalog/api/v1/items/[a-z$", "methods": ["GET"], "effect": "allow"},
				{"path": "^/catalog/api/v1/items$", "methods": [], "effect": "allow"},
				{"path": "^/catalog/api/v1/items$", "methods": ["GET", "GET"], "effect": "permit"}]},
			{"role": "viewer", "accessPolicies": []}]`,
		want: []want{
			{lint.Invalid, "", -1, []string{`role "" (entry 0): empty role name`}},
			{lint.Invalid, "viewer", 0, []string{`effect "Allow": write "allow"`}},
			{lint.Invalid, "viewer", 1, []string{`empty path: write a regexp such as "^/catalog/api/v1/items$"`}},
			{lint.Invalid, "viewer", 2, []string{"missing closing ]"}},
			{lint.Invalid, "viewer", 3, []string{`(allow no methods "^/catalog/api/v1/items$"): no methods`}},
			{lint.Invalid, "viewer", 4, []string{`effect "permit": want "allow" or "deny"`}},
			{lint.Invalid, "viewer", 4, []string{`method "GET" listed twice`}},
			{lint.Invalid, "viewer", -1, []string{`role "viewer" (entry 2): duplicate role (entry 1 defines it too)`}},
		},
	}}
	table := catalogTable(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			check(t, lint.Policy(table, decode(t, tt.policy)), tt.want)
		})
	}
}

// TestExamplePolicyLintsClean: example-service's policy, against a
// registry of its tools and against its own golden route table, has no
// finding.
func TestExamplePolicyLintsClean(t *testing.T) {
	data, err := os.ReadFile("../../example-service/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	roles := decode(t, string(data))
	if len(roles) < 3 {
		t.Fatalf("example-service/policy.json has %d roles", len(roles))
	}
	golden, err := os.ReadFile("../../example-service/tools/testdata/routes.golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var real registry.RouteTable
	if err := json.Unmarshal(golden, &real); err != nil {
		t.Fatal(err)
	}
	for name, table := range map[string]registry.RouteTable{"registry": catalogTable(t), "golden": real} {
		if fs := lint.Policy(table, roles); len(fs) != 0 {
			t.Errorf("%s: %d findings, want none: %v", name, len(fs), fs)
		}
	}
}

// TestPolicyWithoutRoutes: with only local tools, every role sees all
// there is to see; nothing is reported about reaching tools.
func TestPolicyWithoutRoutes(t *testing.T) {
	reg := registry.New[struct{}]()
	reg.Register(tool.Tool[struct{}]{Name: "whoami", Description: "Who am I.", Local: true, Behaviour: behaviour.ReadOnly, Handler: tool.Handle(handle)})
	fs := lint.Policy(reg.Table(), decode(t, `[{"role": "viewer", "accessPolicies": [
		{"path": "^/catalog/api/v1/items/itm-[0-9]+$", "methods": ["GET"], "effect": "allow"}]}]`))
	check(t, fs, nil)
}

// TestPolicySharedWithAnotherService: the same policy, against a table
// that has the orders service's tools too, is held to them.
func TestPolicySharedWithAnotherService(t *testing.T) {
	table := catalogTable(t, tool.Tool[struct{}]{
		Name: "get_order", ServiceKey: "orders", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("orders", http.MethodGet, "/api/v1/orders/{id}")},
	})
	fs := lint.Policy(table, decode(t, `[{"role": "orders-viewer", "accessPolicies": [
		{"path": "^/orders/api/v1/orders/o-[0-9]+$", "methods": ["GET"], "effect": "allow"}]}]`))
	check(t, fs, []want{
		{lint.NoTools, "orders-viewer", -1, nil},
		{lint.ValuesOnly, "orders-viewer", 0, []string{`"/orders/api/v1/orders/o-0" of GET /orders/api/v1/orders/{id} (tool get_order)`}},
	})
}

// TestUnknownMethodMessage: what the lint says of a lower-case method
// holds everything authz.ParsePolicy's refusal says, and the fix.
func TestUnknownMethodMessage(t *testing.T) {
	const policy = `[{"role": "viewer", "accessPolicies": [
		{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["get"], "effect": "allow"}]}]`
	_, err := authz.ParsePolicy([]byte(policy))
	if err == nil {
		t.Fatal("authz.ParsePolicy accepts a lower-case method")
	}
	fs := lint.Policy(catalogTable(t), decode(t, policy))
	if len(fs) != 1 || fs[0].Kind != lint.UnknownMethod {
		t.Fatalf("findings = %v; want one unknown-method", fs)
	}
	for _, s := range []string{`role "viewer"`, "accessPolicies[0]", `method "get"`, `write "GET"`, `"^/catalog/api/v1/items(/[^/]+)?$"`} {
		if !strings.Contains(fs[0].Message, s) {
			t.Errorf("message lacks %q: %s", s, fs[0].Message)
		}
	}
	t.Logf("authz: %v\nlint:  %v", err, fs[0])
}

func TestFindingText(t *testing.T) {
	fs := lint.Policy(catalogTable(t), decode(t, `[{"role": "viewer", "accessPolicies": [
		{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["get"], "effect": "allow"}]}]`))
	if len(fs) != 1 {
		t.Fatalf("findings = %v", fs)
	}
	f := fs[0]
	if want := "lint: unknown-method: " + f.Message; f.String() != want || f.Error() != want {
		t.Fatalf("String() = %q, Error() = %q; want %q", f.String(), f.Error(), want)
	}
	var err error = f
	var got lint.Finding
	if !errors.As(errors.Join(err), &got) || got.Rule != 0 {
		t.Fatalf("errors.As(Join(finding)) = %v", got)
	}
	for k, want := range map[lint.Kind]string{
		lint.Invalid: "invalid", lint.UnknownMethod: "unknown-method", lint.NoTools: "no-tools",
		lint.ValuesOnly: "values-only", lint.TemplateOnly: "template-only", lint.DeadDeny: "dead-deny",
		0: "Kind(0)", 99: "Kind(99)",
	} {
		if k.String() != want {
			t.Errorf("Kind(%d).String() = %q; want %q", int(k), k.String(), want)
		}
	}
}

// TestUnknownToolset: a role's toolset tag that no tool carries is a
// finding naming the role, the tag and the tags there are; known tags
// and roles without toolsets are not.
func TestUnknownToolset(t *testing.T) {
	reg := registry.New[struct{}]()
	for _, tags := range [][]string{{"reads"}, {"reads", "writes"}, nil} {
		reg.Register(tool.Tool[struct{}]{Name: "local_" + strings.Join(tags, "_"), Description: "d", Local: true,
			Behaviour: behaviour.ReadOnly, Tags: tags, Handler: tool.Handle(handle)})
	}
	fs := lint.Policy(reg.Table(), decode(t, `[
		{"role": "ok", "toolsets": ["reads", "writes"], "accessPolicies": []},
		{"role": "typo", "toolsets": ["reads", "raeds"], "accessPolicies": []},
		{"role": "free", "accessPolicies": []}]`))
	var got []lint.Finding
	for _, f := range fs {
		if f.Kind == lint.UnknownToolset {
			got = append(got, f)
		}
	}
	check(t, got, []want{{lint.UnknownToolset, "typo", -1, []string{
		`role "typo": toolsets: no tool carries the tag "raeds", so it shows no tool; the tools' tags are reads, writes`}}})
}
