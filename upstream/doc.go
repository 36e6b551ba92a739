// Package upstream makes typed calls to a tool's upstream service: a
// tool whose work is one request needs no handler code ([Forward]), and
// a handler with logic of its own calls the same machinery ([Call]).
//
//	Registry.Register(tool.Tool[*Deps]{
//		Name: "get_thing", Description: "Fetch one thing by its id.", ServiceKey: "things",
//		VisibilityRoutes: []tool.Route{GetThingRoute},
//		Behaviour:        behaviour.ReadOnly,
//		Handler:          upstream.Forward[*Deps, GetThingInput, Thing](GetThingRoute),
//	})
//
//	type GetThingInput struct {
//		ID    string `json:"id" in:"path" jsonschema:"minLength=1"`
//		Limit int    `json:"limit,omitempty" in:"query" jsonschema:"minimum=1,maximum=100"`
//	}
//
// The container (Deps) is the [Clients] the request's origin and client
// come from, by the route's service key (its first URI segment): the
// kit's service.Upstreams, whose clients carry authz's upstream
// transport (the route and caller checks, origin pinning, the caller's
// bearer or an exchanged token) and telemetry's spans, or [Endpoints].
//
// # The request
//
// In's fields (by their JSON names, as encoding/json finds them:
// embedded structs are flattened, json:"-" fields are left out) become
// the request, by their tag `in`:
//
//   - in:"path" fills the route's placeholder of the same name, through
//     [tool.Route.Bind], so a value can never add or climb a path
//     segment; an untagged field named as a placeholder is a path field
//     too. Its type is a string, integer or bool kind (or a named type of
//     one);
//   - in:"query" is a query parameter, escaped as url.Values.Encode
//     escapes; a slice repeats the key, a nil pointer is left out, and
//     so is a zero value with omitempty (or omitzero). The parameters go
//     in the order of In's fields; in:"query,comma" sends a list as
//     one value, its elements separated by commas (OpenAPI's explode:
//     false), an element holding a comma refused. A type with a
//     MarshalText method
//     (time.Time) formats as its text, a float without an exponent;
//   - in:"header" is a request header named by the JSON name
//     (json:"X-Request-Id"), formatted and left out as a query
//     parameter (in:"header,comma" a list as one value, as for a
//     query); one the transport owns (Authorization, Content-Type,
//     Host, Cookie, the framing headers) is refused;
//   - in:"body" is the whole JSON body (any JSON type; a nil pointer
//     sends none). An option gives the body's media type, a JSON one:
//     in:"body,application/json-patch+json" for a JSON Patch (RFC
//     6902), in:"body,application/merge-patch+json" for a JSON Merge
//     Patch (RFC 7396); the body is encoded as JSON all the same;
//   - an untagged field that names no placeholder is a property of the
//     JSON object body, for POST, PUT and PATCH (with encoding/json's
//     options: omitempty, string); a method without a body refuses it.
//
// A request with a body has Content-Type: application/json, or the
// in:"body" field's media type; every one asks Accept: application/json.
//
// # Unions
//
// A value that may be one of several schemas (JSON Schema's oneOf and
// anyOf, as OpenAPI documents write them) is a [OneOf] or an [AnyOf]:
// the fields of a struct type list its alternatives, by their types and
// jsonschema tags, and the value is carried as the JSON it is, so an
// argument valid for the schema reaches the upstream exactly and an
// answer reaches the client as it came.
//
// # The answer
//
// A 2xx answer's JSON body (at most [MaxResponseBytes], of content type
// application/json or +json) decodes into Out; 204 or an empty body is
// the zero Out. A non-2xx answer is an *[Error]: a tool's client sees
// the status and the upstream's own message, read from its JSON error
// body, truncated and with the request's credentials taken out, never
// the request's URL or a header. [Call] lists the other errors.
package upstream
