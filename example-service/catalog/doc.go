// Package catalog is example-service's upstream: a small catalog HTTP API
// with an in-memory store ([NewHandler], [Store]), its routes, and the
// types of its requests and answers ([Item], [ItemInput], [ItemList]).
// The tools call it with typed upstream calls on its routes (package
// upstream): there is no hand-written client.
//
// # API
//
//	GET    /api/v1/items        → 200 {"items": [Item, ...]}
//	GET    /api/v1/items/{id}   → 200 Item | 404
//	POST   /api/v1/items        {"name", "quantity"} → 201 Item (Location: /api/v1/items/{id}) | 400
//	PUT    /api/v1/items/{id}   {"name", "quantity"} → 200 Item | 400 | 404
//	DELETE /api/v1/items/{id}   → 204 | 404
//	GET    /openapi.json        → 200 the API's OpenAPI 3.1 document ([OpenAPI])
//
// Errors are JSON, {"error": {"code": "not_found", "message": "..."}}, with
// the codes not_found, invalid_request, unsupported_media_type,
// method_not_allowed and too_large. Request bodies are limited to
// [MaxBodyBytes].
//
// # Routes
//
// The API's routes are declared once, as [tool.Route] values on the
// service key [ServiceKey] ([ListRoute], [GetRoute], ...). The handler's
// ServeMux patterns are derived from them, and the tools declare them as
// their VisibilityRoutes and forward to them (upstream.Forward, or
// upstream.Call from a handler), which bind every request path with
// [tool.Route.Bind]: an id can never add or climb a path segment, and
// authz's upstream transport finds each request under the calling
// tool's declared routes.
package catalog
