package bad

import (
	"net/http"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"

	"vettest/svc"
)

// FwdDeps is the container of handler-free tools.
type FwdDeps struct{ upstream.Endpoints }

var Forwarding = registry.New[*FwdDeps]()

func init() {
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward_undeclared",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.List},
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*FwdDeps, args, Item](svc.Get), // want `the handler sends requests on GET /svc/items/\{id\}, which VisibilityRoutes does not declare: add it there`
	})
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward_renamed",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.Route(http.MethodDelete, "/items/{item}")},
		Behaviour:        behaviour.Destructive,
		Handler:          upstream.Forward[*FwdDeps, args, Item](svc.Route(http.MethodDelete, "/items/{id}")), // want `the handler sends requests on DELETE /svc/items/\{id\}, which VisibilityRoutes does not declare`
	})
	Forwarding.Register(tool.Tool[*FwdDeps]{
		Name:             "forward_list_out",
		Description:      "d",
		ServiceKey:       svc.Key,
		VisibilityRoutes: []tool.Route{svc.List},
		Behaviour:        behaviour.ReadOnly,
		Handler:          upstream.Forward[*FwdDeps, struct{}, []Item](svc.List), // want `output type \[\]bad.Item reflects to an array schema`
	})
}
