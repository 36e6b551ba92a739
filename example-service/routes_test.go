package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/internal/testing/golden"
)

func runRoutes(t *testing.T, args ...string) string {
	t.Helper()
	var out, stderr bytes.Buffer
	if err := run(context.Background(), append([]string{"routes"}, args...), nil, &out, &stderr); err != nil {
		t.Fatalf("routes %q: %v\n%s", args, err, stderr.String())
	}
	return out.String()
}

// TestRoutesFormats pins every format of "routes -format" for the
// service's tools and embedded policy in golden files (refresh with go
// test ./example-service -update), so that a change to what a proxy would
// enforce shows in review. The JSON format is the route table's own
// golden file, unchanged.
func TestRoutesFormats(t *testing.T) {
	files := map[string]string{"rego": "routes.rego", "cedar": "routes.cedar", "casbin": "routes.casbin.json", "istio": "routes.istio.yaml", "openapi": "routes.openapi.json"}
	for _, format := range export.Formats {
		if format == export.FormatJSON {
			continue // tools/testdata/routes.golden.json, below
		}
		golden.Check(t, filepath.Join("testdata", files[format]), []byte(runRoutes(t, "-format", format)))
	}
	table, err := os.ReadFile(filepath.Join("tools", "testdata", "routes.golden.json"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(table), runRoutes(t, "-format", "json")); diff != "" {
		t.Errorf("routes -format json differs from the route table's golden file (-table +json):\n%s", diff)
	}
	if diff := cmp.Diff(runRoutes(t), runRoutes(t, "-format", "json")); diff != "" {
		t.Errorf("routes and routes -format json differ:\n%s", diff)
	}
	golden.Check(t, filepath.Join("testdata", "matrix.json"), []byte(runRoutes(t, "-matrix", "-format", "json")))
}

// TestRoutesIstioOptions: -claim and -namespace reach the Istio policies;
// -policy replaces the embedded policy.
func TestRoutesIstioOptions(t *testing.T) {
	got := runRoutes(t, "-format", "istio", "-claim", "realm_access.roles", "-namespace", "shop")
	for _, want := range []string{`key: "request.auth.claims[realm_access][roles]"`, `namespace: "shop"`} {
		if !strings.Contains(got, want) {
			t.Errorf("istio output lacks %q:\n%s", want, got)
		}
	}
	policy := filepath.Join(t.TempDir(), "policy.json")
	if err := os.WriteFile(policy, []byte(`[{"role": "clerk", "accessPolicies": [{"path": "^/catalog/api/v1/items$", "methods": ["POST"], "effect": "allow"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "tool           clerk\naudit_catalog  -\ncreate_item    x\ndelete_item    -\nget_item       -\nlist_items     -\nupdate_item    -\nwhoami         x\n"
	if diff := cmp.Diff(want, runRoutes(t, "-matrix", "-policy", policy)); diff != "" {
		t.Errorf("routes -matrix -policy (-want +got):\n%s", diff)
	}
}

func TestRoutesUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	if err := os.WriteFile(bad, []byte(`[{"role": "x", "accessPolicies": [{"path": "(", "methods": ["GET"], "effect": "allow"}]}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"routes", "-format", "xacml"},
		{"routes", "-matrix", "-format", "rego"},
		{"routes", "-format", "rego", "-claim", "roles"},
		{"routes", "-matrix", "-namespace", "x"},
		{"routes", "-role", "x", "-behaviour", "read-only", "-format", "rego"},
		{"routes", "-role", "x", "-behaviour", "read-only", "-matrix"},
	} {
		var stderr bytes.Buffer
		if err := run(context.Background(), args, nil, io.Discard, &stderr); !errors.Is(err, errUsage) || stderr.Len() == 0 {
			t.Errorf("run %q: error %v, stderr %q; want a usage error explained", args, err, stderr.String())
		}
	}
	for _, args := range [][]string{
		{"routes", "-policy", bad},
		{"routes", "-policy", filepath.Join(t.TempDir(), "missing.json")},
	} {
		err := run(context.Background(), args, nil, io.Discard, io.Discard)
		if err == nil || errors.Is(err, errUsage) || !strings.Contains(err.Error(), "-policy") {
			t.Errorf("run %q: %v, want an error naming -policy", args, err)
		}
	}
}

// TestCatalogOpenAPIDrift holds the tools to the catalog's own OpenAPI
// document, as the catalog serves it: every route a tool declares is an
// operation of the document; the only operation no tool uses is the
// document itself.
func TestCatalogOpenAPIDrift(t *testing.T) {
	srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore()))
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	doc, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi.json: %d, %v", resp.StatusCode, err)
	}
	d, err := export.CheckOpenAPI(tools.Registry.Table(), catalog.ServiceKey, doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Err(); err != nil {
		t.Error(err)
	}
	if diff := cmp.Diff([]export.Operation{{Method: "GET", Path: "/openapi.json"}}, d.Unused); diff != "" {
		t.Errorf("operations no tool uses (-want +got):\n%s", diff)
	}
}
