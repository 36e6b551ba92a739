// Package fix has a lower-case method, whose fix is suggested.
package fix

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"

	"vettest/svc"
)

type Deps struct{}

var Registry = registry.New[*Deps]()

type args struct {
	ID string `json:"id"`
}

func get(context.Context, *Deps, *mcp.CallToolRequest, args) (args, error) { return args{}, nil }

func route(method, path string) tool.Route { return tool.ServiceRoute("svc", method, path) }

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "fix",
		Description: "d",
		ServiceKey:  "svc",
		VisibilityRoutes: []tool.Route{
			route("get", "/items/{id}"),           // want `method "get" is not an upper-case HTTP method`
			{URI: "/svc/items", Method: "post"},   // want `method "post" is not an upper-case HTTP method`
			tool.ServiceRoute("svc", "Put", "/x"), // want `method "Put" is not an upper-case HTTP method`
			svc.Route("patch", "/y"),              // want `method "patch" is not an upper-case HTTP method`
		},
		Behaviour: behaviour.Destructive,
		Handler:   tool.Handle(get),
	})
}
