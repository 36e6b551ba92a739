package tools

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
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
		Tags:             []string{"catalog", "reads"},
		Handler:          upstream.Forward[*Deps, listItemsArgs, itemList](catalog.ListRoute),
	})
}

type listItemsArgs struct{}

// itemList is the catalog's list answer, {"items": [...]}, described.
type itemList struct {
	Items []catalog.Item `json:"items" jsonschema:"description=the catalog's items sorted by id"`
}
