// Package schemavalue makes JSON values that are valid for a JSON Schema
// (draft 2020-12, the dialect MCP servers list tools' input schemas in
// and the one [github.com/google/jsonschema-go/jsonschema] validates),
// for tests that call every tool of a generated service with arguments
// its schema accepts.
//
// [Generate] is deterministic: the same schema gives the same value.
// It honours what a tool's input schema says: required properties (and,
// with [Options.Optional], the optional ones), const and enum, the types
// and their nullable forms, formats (date-time, date, time, duration,
// uuid, email, hostname, ipv4, ipv6, uri, byte, ...), numeric bounds
// (exclusive ones and multipleOf), string lengths, patterns that
// regexp/syntax can walk, array sizes and uniqueness, property counts,
// dependentRequired, allOf (merged), anyOf and oneOf (the first
// alternative whose value the whole schema accepts), local "$ref"s to
// "$defs" or "definitions". Every value is checked against the schema
// with jsonschema-go before it is returned: what it cannot satisfy is an
// error naming the schema, never a value the schema refuses.
//
// The values are chosen to find bugs in whatever carries them: a string
// with no other constraint is "x y&z=é", which needs escaping in a path
// segment, in a query and in a form, and holds a character outside
// ASCII; numbers and booleans are never their type's zero value unless
// the schema leaves no choice, and an optional property whose value
// would be a zero value (an object with no required property, say) is
// left out (an omitempty field would drop it, and a client could not
// tell); the items of an array differ from one another, so that their
// order shows.
//
// Numbers are float64, objects map[string]any and arrays []any, as
// encoding/json decodes into an any.
package schemavalue
