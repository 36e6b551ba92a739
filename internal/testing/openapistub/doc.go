// Package openapistub is an upstream service made from an OpenAPI
// document, for tests of what a generated service sends: a [Stub] serves
// every operation of the document (3.0 or 3.1, as kin-openapi loads it)
// at the document's base path on 127.0.0.1, matches each request to its
// operation (kin-openapi's router, on the escaped path),
// checks it against the operation (kin-openapi's openapi3filter:
// parameters, required body, content type, body schema), records it
// exactly as it arrived (method, escaped path and raw query as sent, the
// operation's header parameters, body bytes), and answers with the
// operation's first 2xx response: its example when the response's schema
// accepts it, else a value made for the schema by package schemavalue and
// checked by kin-openapi's own validator; no body where the document
// gives none (a 204, say).
//
// [Expect] says, independently of any client, which request a tool's
// arguments must become for an operation (path values escaped as one
// segment each, arrays as repeated query keys, the rest the JSON body),
// and [Diff] compares it with what the stub recorded.
//
// [JSONSchema] converts OpenAPI schemas into the JSON Schema 2020-12
// that package schemavalue and jsonschema-go read.
package openapistub
