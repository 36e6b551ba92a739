package export_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

var driftTable = registry.RouteTable{Tools: []registry.RouteTableEntry{
	{Name: "get", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/items/{id}", Method: "GET"}}},
	{Name: "edit", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/items/{id}", Method: "PUT"}, {URI: "/shop/items/{id}/tags", Method: "POST"}}},
	{Name: "tag", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/items/{id}/tags", Method: "POST"}}},
	{Name: "user", ServiceKey: "users", Routes: []tool.Route{{URI: "/users/me", Method: "GET"}}},
	{Name: "whoami", Local: true, Routes: []tool.Route{}},
}}

// TestCheckOpenAPI: routes are matched by method and path, placeholders
// by position whatever their names; a route the document lacks is
// reported with every tool declaring it, an operation no tool uses is
// listed; other services' routes play no part.
func TestCheckOpenAPI(t *testing.T) {
	doc := `{"openapi": "3.1.0", "info": {"title": "shop", "version": "1"}, "paths": {
		"/items/{itemId}": {"parameters": [], "get": {}, "delete": {}, "summary": "an item"},
		"/items": {"get": {}},
		"/items/{itemId}/tags.json": {"post": {}}
	}}`
	d, err := export.CheckOpenAPI(driftTable, "shop", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := export.Drift{
		Service: "shop",
		Missing: []export.MissingRoute{
			{Route: tool.Route{URI: "/shop/items/{id}", Method: "PUT"}, Tools: []string{"edit"}},
			{Route: tool.Route{URI: "/shop/items/{id}/tags", Method: "POST"}, Tools: []string{"edit", "tag"}},
		},
		Unused: []export.Operation{{Method: "GET", Path: "/items"}, {Method: "DELETE", Path: "/items/{itemId}"}, {Method: "POST", Path: "/items/{itemId}/tags.json"}},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
	msg := d.Err().Error()
	for _, s := range []string{`service "shop"`, "PUT /shop/items/{id} (tools edit)", "POST /shop/items/{id}/tags (tools edit, tag)"} {
		if !strings.Contains(msg, s) {
			t.Errorf("error %q lacks %q", msg, s)
		}
	}

	full := `{"paths": {"/items/{x}": {"get": {}, "put": {}}, "/items/{y}/tags": {"post": {}}}}`
	d, err = export.CheckOpenAPI(driftTable, "shop", []byte(full))
	if err != nil || d.Err() != nil || len(d.Unused) != 0 {
		t.Errorf("a document with every route: %+v, %v", d, err)
	}
}

// TestCheckOpenAPIFragments: a path's "#fragment", which tells
// operations on one path apart and no request carries, is no part of
// the route: a tool's route uses every operation it tells apart, and
// one alone needs no tool of its own.
func TestCheckOpenAPIFragments(t *testing.T) {
	doc := `{"paths": {
		"/items/{itemId}#shared_link": {"get": {}, "put": {}},
		"/items/{itemId}": {"get": {}},
		"/items/{itemId}/tags#bulk": {"post": {}}
	}}`
	d, err := export.CheckOpenAPI(driftTable, "shop", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	want := export.Drift{Service: "shop", Missing: []export.MissingRoute{}, Unused: []export.Operation{}}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("drift (-want +got):\n%s", diff)
	}
}

// TestCheckOpenAPIRefuses: what is not an OpenAPI document in JSON, and
// a path item $ref (not followed), are errors, not an empty drift.
func TestCheckOpenAPIRefuses(t *testing.T) {
	for name, doc := range map[string]string{
		"yaml":     "openapi: 3.1.0\npaths: {}\n",
		"no paths": `{"openapi": "3.1.0"}`,
		"ref":      `{"paths": {"/items": {"$ref": "#/components/pathItems/items"}}}`,
		"bad item": `{"paths": {"/items": []}}`,
	} {
		if _, err := export.CheckOpenAPI(driftTable, "shop", []byte(doc)); err == nil || !strings.HasPrefix(err.Error(), `export: service "shop"`) {
			t.Errorf("%s: %v, want an error", name, err)
		}
	}
}

// TestCheckOpenAPIServers: the document's paths are under its servers'
// base paths (variables at their defaults): a route that includes one
// matches, one under no server's path does not (the bare path neither,
// unless a server has no path), and an operation used under any of them
// is used.
func TestCheckOpenAPIServers(t *testing.T) {
	table := registry.RouteTable{Tools: []registry.RouteTableEntry{
		{Name: "v1", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/api/v1/items/{id}", Method: "GET"}}},
		{Name: "v2", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/v2/items/{id}", Method: "PUT"}}},
		{Name: "root", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/items", Method: "GET"}}},
		{Name: "other", ServiceKey: "shop", Routes: []tool.Route{{URI: "/shop/api/items", Method: "GET"}}},
	}}
	servers := `{"url": "https://shop.example/api/v1/"},
		{"url": "{scheme}://shop.example/{base}", "variables": {"scheme": {"default": "https"}, "base": {"default": "v2"}}}`
	paths := `"paths": {"/items/{itemId}": {"get": {}, "put": {}}, "/items": {"get": {}}}`
	for _, tt := range []struct {
		name, servers string
		missing       []string
		unused        int
	}{
		{"with base paths", servers, []string{"other", "root"}, 1}, // GET /items
		{"and one without", servers + `, {"url": "http://127.0.0.1:8080"}`, []string{"other"}, 0},
		{"and a relative one", servers + `, {"url": "relative/path"}`, []string{"other"}, 0},
	} {
		d, err := export.CheckOpenAPI(table, "shop", []byte(`{"openapi": "3.0.3", "servers": [`+tt.servers+`], `+paths+`}`))
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, m := range d.Missing {
			missing = append(missing, m.Tools...)
		}
		slices.Sort(missing)
		if diff := cmp.Diff(tt.missing, missing); diff != "" {
			t.Errorf("%s: tools with a missing route (-want +got):\n%s", tt.name, diff)
		}
		if len(d.Unused) != tt.unused {
			t.Errorf("%s: unused %v, want %d", tt.name, d.Unused, tt.unused)
		}
	}
}
