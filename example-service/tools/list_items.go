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
		Name:  "list_items",
		Title: "List catalog items",
		Description: `
			List every item of the catalog: id, name and quantity in stock,
			sorted by id.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.ListRoute},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(listItems),
	})
}

type listItemsArgs struct{}

type itemList struct {
	Items []catalog.Item `json:"items" jsonschema:"description=the catalog's items sorted by id"`
}

func listItems(ctx context.Context, d *Deps, _ *mcp.CallToolRequest, _ listItemsArgs) (itemList, error) {
	items, err := d.Catalog.List(ctx)
	if err != nil {
		return itemList{}, d.upstreamError(ctx, err)
	}
	return itemList{Items: items}, nil
}
