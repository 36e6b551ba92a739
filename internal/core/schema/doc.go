// Package schema reflects a Go type into the one JSON schema toolroute
// advertises for it and validates with (see [Object]): a tool's input
// (its arguments) or output (its structured result).
//
// # How
//
// One github.com/invopop/jsonschema Reflector, configured once, reflects
// the type into an inline, anonymous, closed schema; the result is
// converted to the SDK's [github.com/google/jsonschema-go/jsonschema.Schema],
// keeping the struct's order of properties.
// Before it reflects, one walk over the Go type refuses what the schema
// would describe wrongly — an interface, a type that contains itself (the
// reflector inlines, and would recurse without end), a url.URL, a type
// that marshals itself without describing itself, a marshaler on the
// pointer only, a map key encoding/json cannot write, a struct whose
// properties are not the fields encoding/json reads and writes — and
// records what the reflected schema must become: map keys that match the
// keys encoding/json writes, and (for an output) nulls wherever
// encoding/json writes null for a Go nil. [Input] and [Output] cache their
// results by type: tools share argument and result types, and reflecting
// costs far more than adding a tool.
//
// # Which fields encoding/json writes
//
// encoding/json answers that itself: for a struct type, the walk builds
// (with reflect.StructOf) a shadow type with the same field names, tags,
// embedding and exportedness, and every field a string, fills each field
// with its own index path, marshals it with encoding/json, and reads back
// which key holds which field. The shadow keeps everything encoding/json's
// field rules look at (tag names and their validity, promotion through
// embedded structs, Go's visibility rules amended by tags, the same type
// embedded twice) and nothing they do not (field types, omitempty), so no
// copy of those rules lives here. Two things reflect.StructOf cannot
// express are translated by encoding/json's stated rules (its package
// doc; Go 1.10's release notes for the second): an embedded
// struct named by a valid tag is a field of that name, and an embedded
// field of an unexported non-struct type is ignored. Whether a tag name is
// valid is asked of encoding/json the same way, with a one-field struct. Each
// shadow carries an unexported field of its own, so that the shadows of
// two types are two types, as encoding/json needs to tell the same type
// embedded twice. Shadows and answers are cached by type, as encoding/json
// caches its own.
//
// google/jsonschema-go's ForType was considered and not used for this: it
// resolves fields with reflect.VisibleFields (Go's promotion rules, not
// encoding/json's), so it answers a different question.
//
// A type that describes itself (a JSONSchema or JSONSchemaAlias method)
// chooses its properties: below it the walk refuses nothing and only finds
// the nulls of an output. The type a JSONSchemaAlias method gives is
// walked as the reflector reflects it.
//
// The reflector's own field rules (depth-first promotion, the last field
// of a name winning, the inline option, jsonschema:"-") are modelled by the
// walk, which compares the model with the reflected schema's properties
// and refuses the type if they differ.
package schema
