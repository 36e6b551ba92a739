package tools

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
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
		Tags:             []string{"catalog", "writes"},
		Idempotent:       true,
		Handler:          upstream.Forward[*Deps, updateItemArgs, catalog.Item](catalog.UpdateRoute),
	})
}

// updateItemArgs is the item's id (the path) and the body of the
// catalog's update request.
type updateItemArgs struct {
	ID       string `json:"id" in:"path" jsonschema:"minLength=1,maxLength=200,description=the item's id"`
	Name     string `json:"name" jsonschema:"minLength=1,maxLength=200,description=the item's new name"`
	Quantity int    `json:"quantity" jsonschema:"minimum=0,maximum=1000000,description=the item's new quantity in stock"`
}
