package devproxy_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/devproxy"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/tool"
)

// A dev proxy answers authz.ProxyAuth as the RBAC proxy would.
func Example() {
	policy := authz.MustParsePolicy([]byte(`[
  {"role": "viewer", "accessPolicies": [{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}
]`))
	tokens, err := tokenfile.Parse([]byte(`[{"token": "s3cret", "subject": "alice", "roles": ["viewer"]}]`), policy.Roles())
	if err != nil {
		fmt.Println(err)
		return
	}
	h, err := devproxy.New(policy, tokens, devproxy.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(h)
	defer srv.Close()

	pa := &authz.ProxyAuth{BaseURL: srv.URL}
	alice := authz.Caller{Subject: "alice", Bearer: "s3cret"}
	ctx := context.Background()
	fmt.Println(pa.Allow(ctx, alice, tool.Route{URI: "/catalog/api/v1/items/42", Method: "GET"}))
	fmt.Println(pa.Allow(ctx, alice, tool.Route{URI: "/catalog/api/v1/items/42", Method: "DELETE"}))
	fmt.Println(pa.AllowMany(ctx, alice, []tool.Route{
		{URI: "/catalog/api/v1/items/{id}", Method: "GET"},
		{URI: "/catalog/api/v1/items/{id}", Method: "DELETE"},
	}))
	fmt.Println(pa.Allow(ctx, authz.Caller{Bearer: "guess"}, tool.Route{URI: "/catalog/api/v1/items", Method: "GET"}))
	// Output:
	// <nil>
	// not authorized (insufficient_scope)
	// [true false] <nil>
	// not authenticated
}
