package authz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// An operator writes a "viewer" role granting exactly the routes of the
// read-only tools.
func ExampleRolePolicyFor() {
	readOnly := []tool.Route{
		tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}"),
		tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items"),
		tool.ServiceRoute("catalog", http.MethodHead, "/api/v1/items"),
	}
	rp := authz.RolePolicyFor("viewer", readOnly)
	out, _ := json.MarshalIndent([]authz.RolePolicy{rp}, "", "  ")
	fmt.Println(string(out))
	// Output:
	// [
	//   {
	//     "role": "viewer",
	//     "accessPolicies": [
	//       {
	//         "path": "^/catalog/api/v1/items$",
	//         "methods": [
	//           "GET",
	//           "HEAD"
	//         ],
	//         "effect": "allow"
	//       },
	//       {
	//         "path": "^/catalog/api/v1/items/[^/]+$",
	//         "methods": [
	//           "GET"
	//         ],
	//         "effect": "allow"
	//       }
	//     ]
	//   }
	// ]
}

func ExamplePolicy() {
	p, err := authz.ParsePolicy([]byte(`[
		{"role": "viewer", "accessPolicies": [
			{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"},
			{"path": "^/catalog/api/v1/items/secret$", "methods": ["GET"], "effect": "deny"}
		]}
	]`))
	if err != nil {
		log.Fatal(err)
	}
	alice := authz.Caller{Subject: "alice", Roles: []string{"viewer"}}
	for _, uri := range []string{"/catalog/api/v1/items/42", "/catalog/api/v1/items/secret"} {
		err := p.Allow(context.Background(), alice, tool.Route{URI: uri, Method: "GET"})
		fmt.Println(uri, err)
	}
	// Output:
	// /catalog/api/v1/items/42 <nil>
	// /catalog/api/v1/items/secret not authorized (insufficient_scope)
}

type exampleDeps struct{}

type exampleArgs struct {
	ID string `json:"id"`
}

type exampleOut struct {
	Name string `json:"name"`
}

// A server lists each caller the tools it may reach.
func ExampleMiddleware() {
	reg := registry.New[*exampleDeps]()
	reg.Register(tool.Tool[*exampleDeps]{
		Name: "get_item", Description: "Fetch one item.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", "GET", "/api/v1/items/{id}")},
		Handler: tool.Handle(func(context.Context, *exampleDeps, *mcp.CallToolRequest, exampleArgs) (exampleOut, error) {
			return exampleOut{Name: "widget"}, nil
		}),
	})
	reg.Register(tool.Tool[*exampleDeps]{
		Name: "delete_item", Description: "Delete one item.", ServiceKey: "catalog", Behaviour: behaviour.Destructive,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", "DELETE", "/api/v1/items/{id}")},
		Handler: tool.Handle(func(context.Context, *exampleDeps, *mcp.CallToolRequest, exampleArgs) (exampleOut, error) {
			return exampleOut{}, nil
		}),
	})
	viewer := authz.RolePolicyFor("viewer", []tool.Route{tool.ServiceRoute("catalog", "GET", "/api/v1/items/{id}")})
	policy, err := authz.NewPolicy([]authz.RolePolicy{viewer})
	if err != nil {
		log.Fatal(err)
	}
	access := reg.Calls()

	server := mcp.NewServer(&mcp.Implementation{Name: "catalog", Version: "v1"}, nil)
	reg.Install(server, &exampleDeps{})
	withCaller := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			// A real server authenticates the request here.
			ctx = authz.WithCaller(ctx, authz.Caller{Subject: "alice", Roles: []string{"viewer"}})
			return next(ctx, method, req)
		}
	}
	server.AddReceivingMiddleware(withCaller, authz.Middleware(authz.Cached(policy, 30*time.Second, 10_000), access, authz.Options{}))

	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ss.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer cs.Close()

	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, t := range res.Tools {
		fmt.Println("listed:", t.Name)
	}
	fmt.Println("cacheScope:", res.CacheScope)
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": "1"}})
	fmt.Println("delete_item:", err)
	// Output:
	// listed: get_item
	// cacheScope: private
	// delete_item: calling "tools/call": unknown tool "delete_item"
}
