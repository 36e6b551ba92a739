package tools

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             "get_item",
		Title:            "Get a catalog item",
		Description:      `Fetch one catalog item by its id.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.GetRoute},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(getItem),
	})
}

type getItemArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,maxLength=200,description=the item's id (from list_items)"`
}

func getItem(ctx context.Context, d *Deps, _ *mcp.CallToolRequest, in getItemArgs) (catalog.Item, error) {
	it, err := d.Catalog.Get(ctx, in.ID)
	return it, d.upstreamError(ctx, err)
}
