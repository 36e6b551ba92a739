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
		Name:  "create_item",
		Title: "Create a catalog item",
		Description: `
			Add a new item to the catalog and return it with the id the
			catalog gave it. Every call creates another item, even with the
			same name.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.CreateRoute},
		Behaviour:        behaviour.Additive,
		Handler:          tool.Handle(createItem),
	})
}

type createItemArgs struct {
	Name     string `json:"name" jsonschema:"minLength=1,maxLength=200,description=the new item's name"`
	Quantity int    `json:"quantity" jsonschema:"minimum=0,maximum=1000000,description=how many are in stock"`
}

func createItem(ctx context.Context, d *Deps, _ *mcp.CallToolRequest, in createItemArgs) (catalog.Item, error) {
	it, err := d.Catalog.Create(ctx, in.Name, in.Quantity)
	return it, d.upstreamError(ctx, err)
}
