package tools

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
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
		Tags:             []string{"catalog", "writes"},
		Handler:          upstream.Forward[*Deps, createItemArgs, catalog.Item](catalog.CreateRoute),
	})
}

// createItemArgs is the body of the catalog's create request.
type createItemArgs struct {
	Name     string `json:"name" jsonschema:"minLength=1,maxLength=200,description=the new item's name"`
	Quantity int    `json:"quantity" jsonschema:"minimum=0,maximum=1000000,description=how many are in stock"`
}
