package tools

import (
	"net/http"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

var getRoute = tool.ServiceRoute("things", http.MethodGet, "/api/v1/things/{id}")

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             "get_thing",
		Description:      "Fetch one thing by its id.",
		ServiceKey:       "things",
		VisibilityRoutes: []tool.Route{getRoute},
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*Deps, getThingArgs, thing](getRoute),
	})
}

type getThingArgs struct {
	ID string `json:"id" jsonschema:"minLength=1,description=the thing's id"`
}

type thing struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}
