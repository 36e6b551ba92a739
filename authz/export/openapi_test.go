package export_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

func loadOpenAPI(tb testing.TB, data []byte) *openapi3.T {
	tb.Helper()
	doc, err := openapi3.NewLoader().LoadFromData(data)
	if err != nil {
		tb.Fatalf("kin-openapi cannot load the document: %v\n%s", err, data)
	}
	if err := doc.Validate(context.Background()); err != nil {
		tb.Fatalf("kin-openapi: the document is invalid: %v\n%s", err, data)
	}
	return doc
}

// TestOpenAPI: the exported document is valid OpenAPI 3.1 (kin-openapi);
// it has exactly one operation per route of the table, its path
// parameters declared, listing in x-mcp-tools exactly the tools that
// declare the route.
func TestOpenAPI(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			var buf bytes.Buffer
			if err := f.exp.OpenAPI(&buf, export.Options{Title: "t", Version: "1.2.3"}); err != nil {
				t.Fatal(err)
			}
			doc := loadOpenAPI(t, buf.Bytes())
			if !doc.IsOpenAPI31OrLater() || doc.Info.Title != "t" || doc.Info.Version != "1.2.3" {
				t.Errorf("openapi %q, info %+v", doc.OpenAPI, doc.Info)
			}
			ops := 0
			for path, item := range doc.Paths.Map() {
				for method, op := range item.Operations() {
					ops++
					r := tool.Route{URI: path, Method: method}
					var want []any
					for _, tl := range f.table.Tools {
						if slices.Contains(tl.Routes, r) {
							want = append(want, tl.Name)
						}
					}
					if want == nil {
						t.Errorf("%s is no route of the table", r)
					}
					if diff := cmp.Diff(want, op.Extensions["x-mcp-tools"]); diff != "" {
						t.Errorf("%s: x-mcp-tools (-want +got):\n%s", r, diff)
					}
					var params []string
					for _, p := range item.Parameters {
						if p.Value.In != "path" || !p.Value.Required {
							t.Errorf("%s: parameter %+v", r, p.Value)
						}
						params = append(params, p.Value.Name)
					}
					if diff := cmp.Diff(r.Placeholders(), params); diff != "" {
						t.Errorf("%s: path parameters (-want +got):\n%s", r, diff)
					}
				}
			}
			if want := len(f.routes()); ops != want {
				t.Errorf("%d operations for %d routes", ops, want)
			}
		})
	}
}

// TestOpenAPIPlaceholderNames: two templates that differ only in their
// placeholder names are one OpenAPI path; the export refuses them,
// naming both, rather than write a document OpenAPI refuses.
func TestOpenAPIPlaceholderNames(t *testing.T) {
	table := registry.RouteTable{Tools: []registry.RouteTableEntry{
		{Name: "a", ServiceKey: "s", Routes: []tool.Route{{URI: "/s/items/{id}", Method: "GET"}}},
		{Name: "b", ServiceKey: "s", Routes: []tool.Route{{URI: "/s/items/{itemId}", Method: "PUT"}}},
	}}
	err := newExporter(t, table, nil).OpenAPI(new(bytes.Buffer), export.Options{})
	if err == nil || !strings.Contains(err.Error(), "/s/items/{id}") || !strings.Contains(err.Error(), "/s/items/{itemId}") {
		t.Errorf("OpenAPI: %v, want a refusal naming both templates", err)
	}
}

// TestCatalogOpenAPIValid: example-service's catalog document, which its
// drift test holds the tools to, is valid OpenAPI 3.1 (kin-openapi).
func TestCatalogOpenAPIValid(t *testing.T) {
	if doc := loadOpenAPI(t, catalog.OpenAPI()); !doc.IsOpenAPI31OrLater() {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
}
