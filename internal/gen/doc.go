// Package gen is toolroute's generator: it reads an upstream service's
// OpenAPI document and writes the tools package of an MCP service on the
// service kit (one file per operation, each tool a typed upstream call,
// upstream.Forward, with no handler code), or a whole module around it.
// cmd/toolroute's new and gen are its command line; it lives under
// internal/ because the command is the interface: its types are no
// compatibility promise, and its tests (and the module's other tests)
// call it in process.
//
//	spec, err := gen.Parse(data, gen.Options{Service: "petstore", Source: "petstore.yaml"})
//	files, err := spec.ModuleFiles(gen.Module{Path: "example.com/petstore-mcp"}) // toolroute new
//	files, err := spec.ToolFiles()                                             // toolroute gen
//	changes, err := gen.Update("tools", files, false)
//
// # From operations to tools
//
// Each GET, HEAD, POST, PUT, PATCH and DELETE operation becomes a tool,
// unless [Spec.Skipped] says why not:
//
//   - its name is the operationId in snake case, or the method and path
//     ("get_pets_pet_id"), the second of two equal names getting "_2";
//     its file is the name, with "_tool" appended where the go command
//     would read the last word as a build constraint or a test
//     ("run_test_tool.go") or where it is one of the package's own files;
//   - its description is the summary, then the description, cut near
//     1024 characters at a paragraph, a sentence or a word;
//   - its behaviour follows from the method: GET and HEAD read-only,
//     POST additive, PUT, PATCH and DELETE destructive, PUT and DELETE
//     idempotent;
//   - its one route is the path under the base path of the document's
//     first server (the path of its URL, variables at their defaults),
//     tool.ServiceRoute(KEY, METHOD, BASE+PATH) ("/" is the service's
//     root, /KEY/, and a trailing "/" stays), a placeholder renamed to
//     an identifier where the document's name is none ({thing-id} is
//     {thing_id}); a "#fragment" that tells operations on one path
//     apart ("/files/{file_id}#get_shared_link") is no part of it, as
//     no request carries one, so such operations share their route;
//     authz/export's CheckOpenAPI holds such routes to the document;
//   - its input has a field per path, query and header parameter (tagged
//     in:"path", in:"query", in:"header"; an optional query or header
//     parameter a pointer, left out when nil; a list sent as one
//     comma-separated value, a header's or explode: false, a typed list
//     tagged in:"query,comma" or in:"header,comma", its items' enum and
//     bounds in its tags) and, for a JSON request body, the
//     properties of an object body as its own untagged fields, or, when
//     one is named like a parameter or the body is no object, one
//     in:"body" field; a body whose one JSON media type is another than
//     application/json (application/json-patch+json,
//     application/merge-patch+json: any +json type) is always one
//     in:"body,MEDIA" field, which upstream.Forward sends under that
//     Content-Type;
//   - its result is the schema of the first 2xx response with JSON
//     content (the default response's without a 2xx one): an object is
//     the result type itself, anything else the in:"body" field of a
//     result struct (a structured result is an object); no JSON answer
//     gives an empty struct. A JSON answer without a schema is the
//     result itself (a map[string]json.RawMessage, the answer's
//     properties as the upstream sent them) when the document's
//     examples of it, at least one, are all objects, and the result's
//     "value" (a json.RawMessage) otherwise: nothing says it is an
//     object, and any JSON reaches the client as it came.
//
// A property an object schema requires but none of its properties
// declares (Box's SharedLink requires "accessed") is a required field of
// any JSON, as JSON Schema reads it, and [Spec.Warnings] names it: most
// likely an error of the document.
//
// Component schemas ($ref "#/components/schemas/NAME") become named types
// in types.go, inline objects named types after their place
// ("ListThingsOutput", "OwnerAddress"). Schema keywords become
// jsonschema tags of the field: required (a field without omitempty),
// enum and const, minimum, maximum and their exclusive forms,
// multipleOf, minLength, maxLength, pattern (where Go's regexp, which
// the SDK's validator uses, compiles it), format, minItems, maxItems,
// uniqueItems (an array's item keywords too); descriptions and defaults
// go to jsonschema_description. Properties keep the document's order.
//
// A oneOf or an anyOf of several typed schemas (a null member aside,
// and with no properties, items or additionalProperties of its own) is
// an upstream.OneOf or upstream.AnyOf of a struct of its alternatives,
// one field per member ("EntityAlternatives" for the component Entity):
// the tool's schema has the oneOf, and the value travels as the JSON it
// is. As an answer, a union of objects is the result itself, a
// map[string]json.RawMessage (a structured result is an object; a
// union's schema is none).
//
// What Go's types and the schema reflector cannot say becomes a
// json.RawMessage (any JSON), with a comment: a oneOf or anyOf with a
// member of any JSON or one closing a cycle, several types, a schema
// without a type, and a
// reference that closes a cycle (the reflector inlines every type, and
// a type that contains itself has no inline schema): every reference
// between two components of one strongly connected component of the
// reference graph, so which ones depends on the graph alone.
//
// # OpenAPI 3.1
//
// kin-openapi (v0.153.0) reads 3.0, 3.1 and 3.2 documents, JSON or YAML,
// into one model. Of 3.1's constructs: a type array with "null"
// (["string", "null"]) is the other type, nullable (a pointer); a type
// array of several other types is any JSON; a oneOf or anyOf of one
// schema and {"type": "null"} is that schema, nullable; const is an enum
// of one value; exclusiveMinimum and exclusiveMaximum as numbers are the
// bounds (3.0's booleans modify minimum and maximum); examples,
// prefixItems, if/then/else, dependent schemas and unevaluated
// properties are not carried into the tags. Webhooks are no operations
// of the service, and get no tool.
//
// # Regeneration
//
// Every file of the tools package starts with a header in the form Go's
// tools recognize ("// Code generated by toolroute ...; DO NOT EDIT.")
// and a second line holding the SHA-256 of the rest of the file. [Update]
// rewrites a file only while that hash matches (no one edited it), and
// never one without the header; see its documentation for the rest.
package gen
