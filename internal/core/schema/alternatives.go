package schema

import (
	"reflect"

	invopop "github.com/invopop/jsonschema"
)

// open is the reflector of a union's alternatives: [reflector]'s
// configuration, its objects open to properties they do not name.
var open = invopop.Reflector{
	Anonymous:                 true,
	DoNotReference:            true,
	ExpandedStruct:            true,
	AllowAdditionalProperties: true,
	Mapper:                    mapped,
}

// Alternatives returns the schemas of the fields of the struct type t,
// in their order: the alternatives of a oneOf or anyOf whose Go type
// lists them as a struct's fields (upstream.OneOf). Each is the schema
// its field would have as a property (its type's, with the field's
// jsonschema tags), inline, its objects open to properties they do not
// name: a union's value is carried as the JSON it is, and the schemas it
// stands for (an OpenAPI document's) allow them. nil if t is not a
// struct or has no field encoding/json names.
//
// t must not contain a union of itself: the reflector would not end
// (upstream checks it before it calls Alternatives).
func Alternatives(t reflect.Type) []*invopop.Schema {
	t = deref(t)
	if t.Kind() != reflect.Struct {
		return nil
	}
	s := open.ReflectFromType(t)
	if s == nil || s.Properties == nil {
		return nil
	}
	var out []*invopop.Schema
	for p := s.Properties.Oldest(); p != nil; p = p.Next() {
		out = append(out, p.Value)
	}
	return out
}
