// Package catalog is example-service's upstream: a small catalog HTTP API
// with an in-memory store ([NewHandler], [Store]), and the typed [Client]
// the tools call it through.
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
// ServeMux patterns are derived from them, the tools declare them as their
// VisibilityRoutes, and the [Client] builds every request path from them
// with [tool.Route.Bind], so an id can never add or climb a path segment,
// and authz's upstream transport finds each request under the calling
// tool's declared routes.
package catalog
