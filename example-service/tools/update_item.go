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
		Name:  "update_item",
		Title: "Update a catalog item",
		Description: `
			Replace the name and quantity of an existing catalog item and
			return the updated item. The previous values are overwritten.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.UpdateRoute},
		Behaviour:        behaviour.Destructive,
		Idempotent:       true,
		Handler:          tool.Handle(updateItem),
	})
}

type updateItemArgs struct {
	ID       string `json:"id" jsonschema:"minLength=1,maxLength=200,description=the item's id"`
	Name     string `json:"name" jsonschema:"minLength=1,maxLength=200,description=the item's new name"`
	Quantity int    `json:"quantity" jsonschema:"minimum=0,maximum=1000000,description=the item's new quantity in stock"`
}

func updateItem(ctx context.Context, d *Deps, _ *mcp.CallToolRequest, in updateItemArgs) (catalog.Item, error) {
	it, err := d.Catalog.Update(ctx, in.ID, in.Name, in.Quantity)
	return it, d.upstreamError(ctx, err)
}
