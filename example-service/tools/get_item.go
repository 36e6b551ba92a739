package tools

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             "get_item",
		Title:            "Get a catalog item",
		Description:      `Fetch one catalog item by its id.`,
		ServiceKey:       catalog.ServiceKey,
		VisibilityRoutes: []tool.Route{catalog.GetRoute},
		Behaviour:        behaviour.ReadOnly,
		Tags:             []string{"catalog", "reads"},
		Handler:          upstream.Forward[*Deps, getItemArgs, catalog.Item](catalog.GetRoute),
	})
}

type getItemArgs struct {
	ID string `json:"id" in:"path" jsonschema:"minLength=1,maxLength=200,description=the item's id (from list_items)"`
}
