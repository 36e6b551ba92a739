// Package svc is a service's routes, as example-service/catalog declares
// them: the analyzer exports the known ones as facts.
package svc

import (
	"net/http"

	"github.com/toolroute/toolroute/tool"
)

// Key is the service's key.
const Key = "svc"

func route(method, path string) tool.Route { return tool.ServiceRoute(Key, method, path) }

// Route is the service's exported route constructor.
func Route(method, path string) tool.Route { return route(method, path) } // want Route:"route func [$]0 /svc[$]1"

// Item returns the route of an item's sub-resource.
func Item(sub string) tool.Route { return tool.Route{URI: "/svc/items/{id}/" + sub, Method: "GET"} } // want Item:"route func GET /svc/items/{id}/[$]0"

// Runtime's route is built at run time: not known.
func Runtime(path string) tool.Route { return tool.ServiceRoute(Key, prefix(), path) }

var (
	List    = route(http.MethodGet, "/items")           // want List:"route GET /svc/items"
	Get     = route(http.MethodGet, "/items/{id}")      // want Get:"route GET /svc/items/{id}"
	Literal = tool.Route{URI: "/svc/x", Method: "POST"} // want Literal:"route POST /svc/x"
	Bad     = route("get", "/items/../admin")           // want Bad:"route get /svc/items/../admin"
	// Moved is assigned at run time: not known.
	Moved = route(http.MethodGet, "/moved")
	// Patched is written at run time, in part: not known.
	Patched = route("get", "/patched")
	// Dynamic is built at run time: not known.
	Dynamic = tool.ServiceRoute(Key, http.MethodGet, prefix()+"/x")
)

func prefix() string { return "/p" }

func init() {
	Moved = route(http.MethodGet, "/elsewhere")
	Patched.Method = http.MethodGet
	local := route("get", "/local")
	local.Method = http.MethodGet
	_ = local
}

// Routes returns every route: a function's result is not known.
func Routes() []tool.Route { return []tool.Route{List, Get} }
