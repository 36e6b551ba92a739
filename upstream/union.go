package upstream

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/toolroute/toolroute/internal/core/schema"
)

// OneOf is a JSON value valid for exactly one of several schemas (JSON
// Schema's oneOf): the fields of the struct type T, one alternative each,
// described by their types and jsonschema tags (their names and JSON
// names are not part of the schema). Its value is the JSON it was given,
// as it came (as a json.RawMessage is), so arguments valid for the
// schema reach the upstream exactly, and an answer reaches the client as
// the upstream sent it.
//
//	// An entity: a user or a group.
//	type Entity = upstream.OneOf[EntityAlternatives]
//
//	type EntityAlternatives struct {
//		User  UserRef  `json:"user"`
//		Group GroupRef `json:"group"`
//	}
//
// Its schema is {"oneOf": [the fields' schemas]}, their objects open to
// properties they do not name (the value is not decoded into them, and
// the schemas an OpenAPI document writes are open too). A nil OneOf is
// JSON null; with omitempty, it is left out. T must be a struct with at
// least one field, and must not contain a OneOf or [AnyOf] of itself;
// reflecting the schema panics otherwise, naming T (so a tool using it
// fails at its registration).
type OneOf[T any] json.RawMessage

// AnyOf is a JSON value valid for at least one of several schemas (JSON
// Schema's anyOf), the fields of the struct type T: as [OneOf] in every
// other way.
type AnyOf[T any] json.RawMessage

// MarshalJSON returns v as it is, null if v is nil.
func (v OneOf[T]) MarshalJSON() ([]byte, error) { return json.RawMessage(v).MarshalJSON() }

// UnmarshalJSON sets *v to a copy of data.
func (v *OneOf[T]) UnmarshalJSON(data []byte) error {
	return (*json.RawMessage)(v).UnmarshalJSON(data)
}

// JSONSchema is v's schema: {"oneOf": [the schemas of T's fields]}.
func (OneOf[T]) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{OneOf: alternatives(reflect.TypeFor[T](), "OneOf")}
}

func (OneOf[T]) alternatives() reflect.Type { return reflect.TypeFor[T]() }

// MarshalJSON returns v as it is, null if v is nil.
func (v AnyOf[T]) MarshalJSON() ([]byte, error) { return json.RawMessage(v).MarshalJSON() }

// UnmarshalJSON sets *v to a copy of data.
func (v *AnyOf[T]) UnmarshalJSON(data []byte) error {
	return (*json.RawMessage)(v).UnmarshalJSON(data)
}

// JSONSchema is v's schema: {"anyOf": [the schemas of T's fields]}.
func (AnyOf[T]) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: alternatives(reflect.TypeFor[T](), "AnyOf")}
}

func (AnyOf[T]) alternatives() reflect.Type { return reflect.TypeFor[T]() }

// union is what OneOf and AnyOf have in common: the struct type of their
// alternatives.
type union interface{ alternatives() reflect.Type }

var unionType = reflect.TypeFor[union]()

// alternatives returns the schemas of the fields of t, the alternatives
// of a union (kind "OneOf" or "AnyOf"), and panics if t is no struct,
// has no field, or contains a union of itself: a schema reflector would
// not end, and a union of no alternatives accepts nothing.
func alternatives(t reflect.Type, kind string) []*jsonschema.Schema {
	if t.Kind() != reflect.Struct {
		panic(fmt.Sprintf("upstream: %s[%v]: %v is not a struct: its fields are the alternatives", kind, t, t))
	}
	if path := unionCycle(t, t, nil, map[reflect.Type]bool{}); path != nil {
		panic(fmt.Sprintf("upstream: %s[%v]: %v contains a union of itself (through %v): its schema would have no end; break the cycle with a json.RawMessage", kind, t, t, path))
	}
	alts := schema.Alternatives(t)
	if len(alts) == 0 {
		panic(fmt.Sprintf("upstream: %s[%v]: %v has no field encoding/json writes: a union of no alternatives accepts nothing", kind, t, t))
	}
	return alts
}

// unionCycle returns the types through which at (met on the way from
// root) leads to a union of root's alternatives, or nil if it does not.
func unionCycle(root, at reflect.Type, path []reflect.Type, seen map[reflect.Type]bool) []reflect.Type {
	if seen[at] {
		return nil
	}
	seen[at] = true
	if at != root && at.Implements(unionType) {
		alt := reflect.Zero(at).Interface().(union).alternatives()
		if alt == root {
			return append(path, at)
		}
		return unionCycle(root, alt, append(path, at), seen)
	}
	switch at.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return unionCycle(root, at.Elem(), path, seen)
	case reflect.Struct:
		for i := range at.NumField() {
			if p := unionCycle(root, at.Field(i).Type, path, seen); p != nil {
				return p
			}
		}
	}
	return nil
}
