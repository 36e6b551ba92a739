// Package bad breaks every rule the analyzer checks, over several files.
package bad

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

type Deps struct{}

var Registry = registry.New[*Deps]()

type args struct {
	ID string `json:"id"`
}

type Item struct {
	ID string `json:"id"`
}

type named string

func get(context.Context, *Deps, *mcp.CallToolRequest, args) (Item, error) { return Item{}, nil }

func route(method, path string) tool.Route { return tool.ServiceRoute("svc", method, path) }

var _ = http.MethodGet
