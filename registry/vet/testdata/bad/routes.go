package bad

import (
	"net/http"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"

	"vettest/svc"
)

func init() {
	Registry.Register(tool.Tool[*Deps]{
		Name:        "routes",
		Description: "d",
		ServiceKey:  "svc",
		VisibilityRoutes: []tool.Route{
			tool.ServiceRoute("billing", http.MethodGet, "/x"), // want `route GET /billing/x is outside service "svc" \(its URI must start with "/svc/"\)`
			tool.ServiceRoute("svc", http.MethodGet, "x"),      // want `if it was built with tool.ServiceRoute, the path must start with "/"`
			{URI: "svc/x", Method: "GET"},                      // want `invalid route GET svc/x: URI must start with "/"`
			route("GET", "/a/../b"),                            // want `invalid route GET /svc/a/../b: URI must not contain a "\.\." segment`
			route("GET", "/items?all=1"),                       // want `URI must not contain a query or fragment`
			route("GET", "/my items"),                          // want `URI must not contain white space or control characters`
			route("GET", "/items/{item-id}"),                   // want `placeholder "{item-id}": name must be an identifier`
			route("GET", "/items/id-{id}"),                     // want `a placeholder must be a whole segment`
			route("get", "/lower"),                             // want `invalid route get /svc/lower: method "get" is not an upper-case HTTP method`
			route("FETCH", "/items"),                           // want `method "FETCH" is not an upper-case HTTP method`
			tool.Route{URI: "/svc/r", Method: "delete"},        // want `method "delete" is not an upper-case HTTP method`
			svc.Bad, // want `invalid route get /svc/items/../admin: method "get"`
			svc.Get,
			route("GET", "/items/{name}"), // want `duplicate route GET /svc/items/\{name\} \(the same as GET /svc/items/\{id\}: placeholder names do not tell routes apart\)`
			svc.Route("GET", "/a/../b"),   // want `invalid route GET /svc/a/../b: URI must not contain a "\.\." segment`
			svc.Route("PUT", "items"),     // want `route PUT /svcitems is outside service "svc"`
			svc.Item("x y"),               // want `invalid route GET /svc/items/\{id\}/x y: URI must not contain white space`
			svc.Route(http.MethodGet, "/items/{other}"), // want `duplicate route GET /svc/items/\{other\} \(the same as GET /svc/items/\{name\}`
			svc.List,
			svc.List, // want `duplicate route GET /svc/items$`
		},
		Behaviour: behaviour.ReadOnly,
		Handler:   tool.Handle(get),
	})
}
