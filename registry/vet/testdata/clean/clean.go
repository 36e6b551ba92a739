// Package clean declares valid tools only: no diagnostics.
package clean

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"

	"vettest/svc"
)

type Deps struct{}

var Registry = registry.New[*Deps]()

type args struct {
	ID string `json:"id"`
}

type Item struct {
	ID string `json:"id"`
}

func get(context.Context, *Deps, *mcp.CallToolRequest, args) (Item, error) { return Item{}, nil }

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:  "get_item",
		Title: "Get an item",
		Description: `
			Fetch one item.`,
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Get, svc.List, tool.ServiceRoute(svc.Key, http.MethodHead, "/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "server_info",
		Description: "Describe this server.",
		Local:       true,
		Behaviour:   behaviour.Additive,
		Idempotent:  true,
		Handler: tool.Handle(func(context.Context, *Deps, *mcp.CallToolRequest, map[string]string) (*Item, error) {
			return nil, nil
		}),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "raw",
		Description:      "d",
		ServiceKey:       "svc",
		VisibilityRoutes: []tool.Route{{URI: "/svc/raw/{id}", Method: "DELETE"}, {"/svc/raw", "POST"}},
		Behaviour:        behaviour.Destructive,
		Handler: tool.HandleResult(func(context.Context, *Deps, *mcp.CallToolRequest, map[int]string) (*mcp.CallToolResult, error) {
			return nil, nil
		}),
	})
}

// Two registries may each have a tool of the same name.
var Other = registry.New[*Deps]()

func init() {
	Other.Register(tool.Tool[*Deps]{
		Name:        "server_info",
		Description: "Describe this server.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
	})
}

// FwdDeps is the container of handler-free tools.
type FwdDeps struct{ upstream.Endpoints }

var Forwarding = registry.New[*FwdDeps]()

func init() {
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.List, svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*FwdDeps, args, Item](svc.Get),
	})
}
