// Package tool is the vocabulary of a tool declaration: [Tool], [Route],
// and the typed handlers made by [Handle] and [HandleResult].
//
// A tool file declares one tool and registers it in init:
//
//	func init() {
//		Registry.Register(tool.Tool[*Deps]{
//			Name:             "get_item",
//			Description:      `Fetch one catalog item by its id.`,
//			ServiceKey:       "catalog",
//			VisibilityRoutes: []tool.Route{tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")},
//			Behaviour:        behaviour.ReadOnly,
//			Handler:          tool.Handle(getItem),
//		})
//	}
//
// # Routes
//
// A [Route] is the (URI, method) pair an RBAC proxy authorizes. The same
// routes decide which callers see a tool and which upstream requests a
// call may send. [Route.Bind] fills a route's "{name}" placeholders with
// escaped values and refuses any value that could add or climb a path
// segment on its way to the upstream: "", ".", "..", "..;x", and any
// value holding "/", "\" or a control character, as it is, once
// percent-decoded (proxies and frameworks decode %2F before routing,
// some twice) or in any Unicode normalization form (NFKC turns "‥" into
// "..", "℀" into "a/c"; the rule comes from Unicode's data, through
// golang.org/x/text/unicode/norm, not from a list of look-alikes).
// [Route.ServicePath] is a bound route's upstream request path (its URI
// without the service key). [Route.Match] tells whether a concrete
// request falls under a route, by the same rule. Pass identifiers that may hold a slash as query
// parameters instead.
//
// # Schemas
//
// Input and output schemas are reflected once, when a handler is made,
// by one github.com/invopop/jsonschema Reflector (inline, no $ref, closed
// to unknown properties) and always handed to the SDK explicitly, so the
// SDK never infers a second, different schema. Use invopop's jsonschema
// struct tags: `jsonschema:"minLength=1,description=the item's id"` (a
// comma inside a description is written "\,"). Types that contain
// themselves cannot be inlined and are refused. A type that marshals
// itself as text (MarshalText: uuid.UUID, netip.Addr) is a string. One
// that marshals itself as JSON (MarshalJSON) must describe its JSON with
// a JSONSchema() *jsonschema.Schema method (value receiver) or a
// JSONSchemaAlias() method, or the handler is refused: its fields would
// describe something else. time.Time, net.IP, json.Number and
// json.RawMessage are known; url.URL is refused (encoding/json writes it
// as an object of its fields): use a string.
//
// Every structured result is validated against its output schema (as
// go-sdk's typed tools do), so output schemas accept what encoding/json
// writes for nil values: null for a nil slice, map or pointer (fields
// without omitempty), and no fields at all for a nil embedded struct
// pointer. Input schemas stay strict.
//
// # Calls
//
// The registry's wrapper runs every call in a context that carries its
// [Call] (the tool's name, service key, routes and locality):
// [CallFromContext] reads it, and authz's upstream transport uses it to
// check every request the tool sends.
//
// # Progress
//
// A handler reports progress with [Progress](ctx, req, done, total,
// message): it sends notifications/progress only when the client gave a
// progress token, drops values that do not increase, and sends nothing
// once the call has ended. It needs the call state that the server (or,
// on a bare *mcp.Server, the registry) puts in the call's context when the
// call begins, once per call.
//
// # Errors
//
// A handler made by [Handle] or [HandleResult] that panics ends its call
// with an isError result of a generic text (the panic and its stack go to
// the server's log). An error it returns that wraps an error with a
// method ClientText() string (such as an authorization refusal of authz)
// reaches the client as that text, and one whose text would show an
// upstream request's URL (an http.Client's *url.Error) as "upstream
// request failed": tool code does nothing for either.
package tool
