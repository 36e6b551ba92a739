package bad

import (
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"

	"vettest/svc"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:             "local_with_routes",
		Description:      "d",
		Local:            true,
		VisibilityRoutes: []tool.Route{svc.Get}, // want `a Local tool must not declare VisibilityRoutes \(it calls no upstream\)`
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:        "local_with_key",
		Description: "d",
		Local:       true,
		ServiceKey:  "svc", // want `a Local tool must not declare a ServiceKey`
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{ // want `no VisibilityRoutes and not Local`
		Name:        "nothing",
		Description: "d",
		ServiceKey:  "svc",
		Behaviour:   behaviour.ReadOnly,
		Handler:     tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "empty_routes",
		Description:      "d",
		ServiceKey:       "svc",
		VisibilityRoutes: []tool.Route{}, // want `no VisibilityRoutes and not Local`
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{ // want `VisibilityRoutes without a ServiceKey: name the upstream service the tool calls`
		Name:             "no_key",
		Description:      "d",
		VisibilityRoutes: []tool.Route{svc.Get},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
	Registry.Register(tool.Tool[*Deps]{
		Name:             "bad_key",
		Description:      "d",
		ServiceKey:       "cat/alog", // want `ServiceKey "cat/alog" is not a plain path segment`
		VisibilityRoutes: []tool.Route{{URI: "/cat/alog/x", Method: "GET"}},
		Behaviour:        behaviour.ReadOnly,
		Handler:          tool.Handle(get),
	})
}
