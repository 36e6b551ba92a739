// Package tools declares example-service's MCP tools, one per file, each
// registering itself on [Registry] in an init function:
//
//	list_items, get_item   read-only    GET    /catalog/api/v1/items[/{id}]
//	audit_catalog          read-only    GET    /catalog/api/v1/items[/{id}]
//	create_item            additive     POST   /catalog/api/v1/items
//	update_item            destructive  PUT    /catalog/api/v1/items/{id}   (idempotent)
//	delete_item            destructive  DELETE /catalog/api/v1/items/{id}   (idempotent)
//	whoami                 local        —
//
// The routes are the catalog package's route values: the same values the
// tools declare are the ones they send on, so what a tool declares is
// exactly what it can send. get_item, list_items, create_item and
// update_item are handler-free: each is one request, upstream.Forward
// of its route, its arguments' fields becoming the request's path and
// body. delete_item (which may ask for confirmation first) and
// audit_catalog (a list, then a request per item, with progress) are
// handlers with logic that call the same machinery, upstream.Call. The
// route table is kept as a golden file (testdata/routes.golden.json) so
// that every change to what a tool may reach shows up in review; refresh
// it with
//
//	go test ./example-service/tools -run TestRouteTable -update
//
// To add a tool, add one file: its argument and result types, and an
// init function that registers the declaration, with upstream.Forward
// or a handler function.
package tools
