package schema

import (
	"encoding"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	invopop "github.com/invopop/jsonschema"
)

// reflector is the one schema reflector of toolroute: every schema a tool
// advertises comes from it. Schemas are inline (no root $ref, no $defs),
// anonymous (no $id derived from the Go package path), and closed to
// properties they do not name. Its Mapper gives the types encoding/json
// writes otherwise than their kind the schema of what it writes.
var reflector = invopop.Reflector{
	Anonymous:      true,
	DoNotReference: true,
	ExpandedStruct: true,
	Mapper:         mapped,
}

var (
	invopopSchema = reflect.TypeFor[interface{ JSONSchema() *invopop.Schema }]()
	invopopAlias  = reflect.TypeFor[interface{ JSONSchemaAlias() any }]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()

	timeType       = reflect.TypeFor[time.Time]()
	ipType         = reflect.TypeFor[net.IP]()
	urlType        = reflect.TypeFor[url.URL]()
	numberType     = reflect.TypeFor[json.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// reflectorKnows reports whether the reflector has a schema of its own
// for t, right for encoding/json.
func reflectorKnows(t reflect.Type) bool {
	return t == timeType || t == ipType || t == rawMessageType
}

// describesItself reports whether t's schema is given by t's own methods.
func describesItself(t reflect.Type) bool {
	return t.Implements(invopopSchema) || t.Implements(invopopAlias)
}

// marshals reports whether encoding/json writes a t (not a pointer) with
// a method of t or *t rather than by its kind.
func marshals(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		p.Implements(jsonMarshaler) || p.Implements(textMarshaler)
}

// mapped is the reflector's Mapper: json.Number is a JSON number and a
// TextMarshaler a JSON string, whatever their kind. Marshalers the walk
// accepts otherwise describe themselves or are known to the reflector.
func mapped(t reflect.Type) *invopop.Schema {
	switch {
	case t == numberType:
		return &invopop.Schema{Type: "number"} // encoding/json writes its digits as a number
	case reflectorKnows(t) || describesItself(t):
		return nil
	case t.Implements(textMarshaler):
		return &invopop.Schema{Type: "string"} // encoding/json writes MarshalText's result as a string
	}
	return nil
}

// For returns the JSON schema toolroute advertises for t (a pointer type
// is its element's), as the SDK's schema type, which also validates
// against it. It is not cached, and accepts non-object schemas; a tool's
// schemas come from [Input] and [Output].
func For(t reflect.Type) (*jsonschema.Schema, error) {
	return reflectType(t, false)
}

// reflectType returns the schema of t, as an output (accepting nulls) or
// not.
func reflectType(t reflect.Type, output bool) (*jsonschema.Schema, error) {
	t = deref(t)
	if t.Kind() == reflect.Interface {
		return nil, errInterface(t.String())
	}
	n, err := walk(t)
	if err != nil {
		return nil, err
	}
	// The root is expanded, never mapped: map it here.
	reflected := mapped(t)
	if reflected == nil {
		reflected = reflector.ReflectFromType(t)
	}
	data, err := json.Marshal(reflected)
	if err != nil {
		return nil, fmt.Errorf("schema of %v: %w", t, err)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("schema of %v: %w", t, err)
	}
	keepOrder(reflected, s)
	if err := n.fit(s, output); err != nil {
		return nil, err
	}
	// jsonschema-go validates with draft 2020-12 whatever $schema says;
	// dropping it keeps tools/list small.
	s.Schema = ""
	return s, nil
}

// keepOrder gives s, the SDK's copy of the reflected schema r, r's order
// of properties: the fields' order in the Go struct, as its author wrote
// them (a model reads a tool's arguments in that order), where a Go map
// would list them in alphabetical order.
func keepOrder(r *invopop.Schema, s *jsonschema.Schema) {
	if r == nil || s == nil {
		return
	}
	if r.Properties != nil {
		s.PropertyOrder = make([]string, 0, r.Properties.Len())
		for p := r.Properties.Oldest(); p != nil; p = p.Next() {
			s.PropertyOrder = append(s.PropertyOrder, p.Key)
			keepOrder(p.Value, s.Properties[p.Key])
		}
	}
	for k, v := range r.PatternProperties {
		keepOrder(v, s.PatternProperties[k])
	}
	for k, v := range r.DependentSchemas {
		keepOrder(v, s.DependentSchemas[k])
	}
	keepOrderAll(r.AllOf, s.AllOf)
	keepOrderAll(r.AnyOf, s.AnyOf)
	keepOrderAll(r.OneOf, s.OneOf)
	keepOrderAll(r.PrefixItems, s.PrefixItems)
	keepOrder(r.Not, s.Not)
	keepOrder(r.If, s.If)
	keepOrder(r.Then, s.Then)
	keepOrder(r.Else, s.Else)
	keepOrder(r.Items, s.Items)
	keepOrder(r.Contains, s.Contains)
	keepOrder(r.AdditionalProperties, s.AdditionalProperties)
	keepOrder(r.PropertyNames, s.PropertyNames)
	keepOrder(r.ContentSchema, s.ContentSchema)
}

func keepOrderAll(r []*invopop.Schema, s []*jsonschema.Schema) {
	for i := range min(len(r), len(s)) {
		keepOrder(r[i], s[i])
	}
}

// objects caches the results of [Input] and [Output] by type and
// direction.
var objects sync.Map // key → *result

type key struct {
	t      reflect.Type
	output bool
}

type result struct {
	o   *Object
	err error
}

// Input returns the schema of t as a tool's arguments, checked to be a
// valid object schema. Every caller asking for the same type shares one
// Object (and one error): do not modify it.
func Input(t reflect.Type) (*Object, error) { return object(key{t, false}) }

// Output returns the schema of t as a tool's structured result, checked
// to be a valid object schema, and accepting the nulls encoding/json
// writes for nil slices, maps and pointers (every result is validated
// against it). Every caller asking for the same type shares one Object
// (and one error): do not modify it.
func Output(t reflect.Type) (*Object, error) { return object(key{t, true}) }

func object(k key) (*Object, error) {
	if r, ok := objects.Load(k); ok {
		return r.(*result).o, r.(*result).err
	}
	o, err := newObject(k.t, k.output)
	r, _ := objects.LoadOrStore(k, &result{o, err})
	return r.(*result).o, r.(*result).err
}

func newObject(t reflect.Type, output bool) (*Object, error) {
	what := "input"
	if output {
		what = "output"
	}
	s, err := reflectType(t, output)
	if err != nil {
		return nil, typeError(what, err)
	}
	if s.Type != "object" {
		return nil, NotObject(what, t.String(), s.Type)
	}
	o, err := newObjectOf(s, what)
	if err != nil {
		return nil, fmt.Errorf("%s type %v: %w", what, t, err)
	}
	return o, nil
}

// typeError is the error of a type whose schema fails to reflect, as a
// tool's input or output (what).
func typeError(what string, err error) error { return fmt.Errorf("%s type: %w", what, err) }

func errInterface(typ string) error {
	return fmt.Errorf("%v is an interface: its schema is unknown", typ)
}

// Interface is [Input]'s (what "input") or [Output]'s (what "output")
// error for an interface type, spelled typ as reflect.Type's String
// spells it. registry/vet reports it for the types it sees in the source.
func Interface(what, typ string) error { return typeError(what, errInterface(typ)) }

// NotObject is [Input]'s (what "input") or [Output]'s (what "output")
// error for a type, spelled typ as reflect.Type's String spells it,
// whose schema has the JSON type jsonType, not "object". registry/vet
// reports it for the types it sees in the source.
func NotObject(what, typ, jsonType string) error {
	var kind string
	switch jsonType {
	case "":
		kind = "a schema of no type"
	case "array", "integer":
		kind = "an " + jsonType + " schema"
	default:
		kind = "a " + jsonType + " schema"
	}
	return fmt.Errorf("%s type %v reflects to %s, want an object (structs and maps are objects; wrap a list in a struct)", what, typ, kind)
}
