package catalog

import (
	"net/http"

	"github.com/toolroute/toolroute/tool"
)

// ServiceKey is the catalog's service key: the first segment of its
// routes' URIs, as an RBAC proxy in front of it sees them.
const ServiceKey = "catalog"

// route returns the catalog route of method and path.
func route(method, path string) tool.Route { return tool.ServiceRoute(ServiceKey, method, path) }

// The catalog API's routes. Tools declare these values and forward to
// them; the handler is derived from them.
var (
	// ListRoute lists every item.
	ListRoute = route(http.MethodGet, "/api/v1/items")
	// GetRoute fetches one item.
	GetRoute = route(http.MethodGet, "/api/v1/items/{id}")
	// CreateRoute creates an item.
	CreateRoute = route(http.MethodPost, "/api/v1/items")
	// UpdateRoute replaces an item's name and quantity.
	UpdateRoute = route(http.MethodPut, "/api/v1/items/{id}")
	// DeleteRoute deletes an item.
	DeleteRoute = route(http.MethodDelete, "/api/v1/items/{id}")
)

// Routes returns every route of the catalog API.
func Routes() []tool.Route {
	return []tool.Route{ListRoute, GetRoute, CreateRoute, UpdateRoute, DeleteRoute}
}

// pattern returns the ServeMux pattern of a route: "GET /api/v1/items/{id}".
func pattern(r tool.Route) string { return r.Method + " " + r.ServicePath() }
