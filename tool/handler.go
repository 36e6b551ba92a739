package tool

import (
	"cmp"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/google/jsonschema-go/jsonschema"
	invopop "github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Handler runs a tool's calls against a dependency container C. It is
// made by [Handle] or [HandleResult]; the zero Handler is "missing" and
// refused by the registry.
//
// A Handler carries the tool's input and output schemas, reflected once
// from its Go types when it is made.
type Handler[C any] struct {
	b *binding[C]
}

type binding[C any] struct {
	in, out *jsonschema.Schema // out is nil for HandleResult
	err     error
	add     func(s *mcp.Server, t *mcp.Tool, deps C, wrap Wrap)
}

// Wrap runs one invocation of a handler: it must call run (at most once)
// with the context the handler should see, and return run's error or one
// of its own. The registry's Wrap recovers panics and begins the call
// with [BeginCall], which puts the [Call] and the progress state in the
// context.
type Wrap func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error

// IsZero reports whether h is the zero Handler (no handler was set).
func (h Handler[C]) IsZero() bool { return h.b == nil }

// Err reports why h cannot serve: its In or Out type does not reflect to
// an object schema, or to one that describes what encoding/json reads and
// writes for it (a type that contains itself, a url.URL, a marshaler with
// a pointer receiver, a map key encoding/json cannot write, a field
// encoding/json names otherwise than the schema). The registry refuses
// such handlers.
func (h Handler[C]) Err() error {
	if h.b == nil {
		return errors.New("missing handler")
	}
	return h.b.err
}

// InputSchema returns the JSON schema of the handler's arguments. It is
// shared by every handler of the same In type: do not modify it.
func (h Handler[C]) InputSchema() *jsonschema.Schema {
	if h.b == nil {
		return nil
	}
	return h.b.in
}

// OutputSchema returns the JSON schema of the handler's structured
// result, or nil for a [HandleResult] handler, which returns whole results.
// It is shared by every handler of the same Out type: do not modify it.
func (h Handler[C]) OutputSchema() *jsonschema.Schema {
	if h.b == nil {
		return nil
	}
	return h.b.out
}

// AddTo adds t to s, served by h with deps. t's schemas are set here
// from h's (callers leave them nil). Every call runs through wrap, which
// may be nil. The SDK validates arguments against the input schema before
// the handler runs and answers bad ones with an isError result.
//
// AddTo panics if h is zero or [Handler.Err] is not nil; the registry's
// Install checks both first.
func (h Handler[C]) AddTo(s *mcp.Server, t *mcp.Tool, deps C, wrap Wrap) {
	if err := h.Err(); err != nil {
		panic(fmt.Sprintf("tool: AddTo %q: %v", t.Name, err))
	}
	h.b.add(s, t, deps, wrap)
}

// Handle makes a typed Handler. fn gets the dependency container, the raw
// request (for its session, progress token and metadata) and the decoded,
// validated arguments; its Out value becomes the result's structured
// content (and a text copy of it).
//
// To ask the user a question (a multi-round-trip request), fn returns an
// error with a method InputRequiredResult() *mcp.CallToolResult, such as
// authz/permission's InputRequiredError: a result with InputRequests and
// no content so returned becomes the call's result, and the SDK runs fn
// again with the answer.
//
// In and Out must reflect to object schemas (structs or maps; pointers to
// them): structured results are objects, so wrap a list in a struct. A
// plain error from fn becomes an isError result; a *jsonrpc.Error becomes
// a protocol error.
func Handle[C, In, Out any](fn func(ctx context.Context, deps C, req *mcp.CallToolRequest, in In) (Out, error)) Handler[C] {
	if fn == nil {
		return Handler[C]{}
	}
	in, inErr := objectSchema[In]("input")
	out, outErr := objectSchema[Out]("output")
	b := &binding[C]{in: in, out: out, err: errors.Join(inErr, outErr)}
	b.add = func(s *mcp.Server, t *mcp.Tool, deps C, wrap Wrap) {
		tt := *t
		tt.InputSchema, tt.OutputSchema = in, out
		mcp.AddTool(s, &tt, func(ctx context.Context, req *mcp.CallToolRequest, args In) (*mcp.CallToolResult, Out, error) {
			var res Out
			run := func(ctx context.Context) (err error) {
				res, err = fn(ctx, deps, req, args)
				return err
			}
			if err := invoke(ctx, req, wrap, run); err != nil {
				var zero Out
				if ask := inputRequired(err); ask != nil {
					return ask, zero, nil
				}
				return nil, zero, err
			}
			return nil, res, nil
		})
	}
	return Handler[C]{b: b}
}

// HandleResult makes a Handler whose fn returns a whole
// [mcp.CallToolResult]: several contents, images, or an error result of
// its own. Such a tool declares no output schema. In must reflect to an
// object schema.
func HandleResult[C, In any](fn func(ctx context.Context, deps C, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, error)) Handler[C] {
	if fn == nil {
		return Handler[C]{}
	}
	in, err := objectSchema[In]("input")
	b := &binding[C]{in: in, err: err}
	b.add = func(s *mcp.Server, t *mcp.Tool, deps C, wrap Wrap) {
		tt := *t
		// OutputSchema stays nil and Out is any: the SDK infers nothing.
		tt.InputSchema, tt.OutputSchema = in, nil
		mcp.AddTool(s, &tt, func(ctx context.Context, req *mcp.CallToolRequest, args In) (*mcp.CallToolResult, any, error) {
			var res *mcp.CallToolResult
			run := func(ctx context.Context) (err error) {
				res, err = fn(ctx, deps, req, args)
				return err
			}
			if err := invoke(ctx, req, wrap, run); err != nil {
				if ask := inputRequired(err); ask != nil {
					return ask, nil, nil
				}
				return nil, nil, err
			}
			return res, nil, nil
		})
	}
	return Handler[C]{b: b}
}

// inputRequired returns the question err carries, if it has an
// InputRequiredResult method returning a result with InputRequests and
// no content (a multi-round-trip request for input); else nil, and err
// stays an error.
func inputRequired(err error) *mcp.CallToolResult {
	var q interface {
		InputRequiredResult() *mcp.CallToolResult
	}
	if !errors.As(err, &q) {
		return nil
	}
	res := q.InputRequiredResult()
	if res == nil || res.InputRequests == nil || len(res.Content) > 0 || res.StructuredContent != nil || res.IsError {
		return nil
	}
	return res
}

func invoke(ctx context.Context, req *mcp.CallToolRequest, wrap Wrap, run func(context.Context) error) error {
	if wrap == nil {
		return run(ctx)
	}
	return wrap(ctx, req, run)
}

// reflector is the one schema reflector of toolroute: every schema a tool
// advertises comes from it. Schemas are inline (no root $ref, no $defs),
// anonymous (no $id derived from the Go package path), and closed to
// properties they do not name.
var reflector = invopop.Reflector{
	Anonymous:      true,
	DoNotReference: true,
	ExpandedStruct: true,
}

// SchemaFor returns the JSON schema toolroute advertises for T, as the
// SDK's schema type (which also validates against it).
func SchemaFor[T any]() (*jsonschema.Schema, error) {
	return schemaFor(reflect.TypeFor[T]())
}

func schemaFor(t reflect.Type) (*jsonschema.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.Interface {
		return nil, fmt.Errorf("%v is an interface: its schema is unknown", t)
	}
	// The reflector inlines every type: a type that contains itself would
	// recurse until the stack overflows, which no recover can catch.
	if rec := recursiveType(t, nil); rec != nil {
		return nil, fmt.Errorf("%v contains itself (through %v): an inline schema cannot describe a recursive type", t, rec)
	}
	// What marshals itself has a JSON its fields do not describe.
	var problem error
	r := reflector
	r.Mapper = func(t reflect.Type) *invopop.Schema {
		s, err := marshalerSchema(t)
		if err != nil && problem == nil {
			problem = err
		}
		return s
	}
	// The root is expanded, never mapped: map it here.
	reflected, err := marshalerSchema(t)
	if err != nil {
		return nil, err
	}
	if reflected == nil {
		reflected = r.ReflectFromType(t)
	}
	if problem != nil {
		return nil, problem
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
	if err := checkWire(s, t); err != nil {
		return nil, err
	}
	// The SDK validates with draft 2020-12 whatever $schema says; dropping
	// it keeps tools/list small.
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

// objectSchemas caches objectSchema's results by type and direction:
// reflecting and resolving a schema costs far more than adding a tool to
// a server, and tools share argument and result types.
var objectSchemas sync.Map // schemaKey → *schemaResult

type schemaKey struct {
	t    reflect.Type
	what string
}

type schemaResult struct {
	s   *jsonschema.Schema
	err error
}

// objectSchema returns the schema of T as a tool's input or output
// (what), checked to be a valid object schema. Handlers of the same types
// share one schema.
func objectSchema[T any](what string) (*jsonschema.Schema, error) {
	key := schemaKey{reflect.TypeFor[T](), what}
	if r, ok := objectSchemas.Load(key); ok {
		return r.(*schemaResult).s, r.(*schemaResult).err
	}
	s, err := newObjectSchema(key.t, what)
	r, _ := objectSchemas.LoadOrStore(key, &schemaResult{s, err})
	return r.(*schemaResult).s, r.(*schemaResult).err
}

func newObjectSchema(t reflect.Type, what string) (*jsonschema.Schema, error) {
	s, err := schemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("%s type: %w", what, err)
	}
	if what == "output" {
		// The SDK validates every result against the output schema: it
		// must accept the nulls encoding/json writes for nil values.
		allowNulls(s, t)
	}
	if s.Type != "object" {
		var kind string
		switch s.Type {
		case "":
			kind = "a schema of no type"
		case "array", "integer":
			kind = "an " + s.Type + " schema"
		default:
			kind = "a " + s.Type + " schema"
		}
		return nil, fmt.Errorf("%s type %v reflects to %s, want an object (structs and maps are objects; wrap a list in a struct)", what, t, kind)
	}
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, fmt.Errorf("%s type %v: invalid schema: %w", what, t, err)
	}
	return s, nil
}

var (
	invopopSchema = reflect.TypeFor[interface{ JSONSchema() *invopop.Schema }]()
	invopopAlias  = reflect.TypeFor[interface{ JSONSchemaAlias() any }]()
	jsonMarshaler = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

var (
	timeType       = reflect.TypeFor[time.Time]()
	ipType         = reflect.TypeFor[net.IP]()
	urlType        = reflect.TypeFor[url.URL]()
	numberType     = reflect.TypeFor[json.Number]()
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// marshalerSchema is the reflector's Mapper for types that marshal
// themselves: the reflector would describe their fields, not their JSON.
// A TextMarshaler (value receiver) is a JSON string; a json.Marshaler
// must describe itself (a JSONSchema method with a value receiver, or
// JSONSchemaAlias), else it is an error. A marshaler on the pointer only
// is an error too: encoding/json does not call it for a value it cannot
// address, such as a result, and writes the fields instead. json.Number
// is a JSON number; url.URL, which encoding/json writes as an object of
// its fields and cannot read from a string, is an error. The types the
// reflector knows (time.Time, net.IP, json.RawMessage) and those that
// describe themselves are left to it (nil, nil).
func marshalerSchema(t reflect.Type) (*invopop.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == urlType:
		return nil, fmt.Errorf("%v is an object of its fields for encoding/json, which cannot read a URL string into it: use a string field (and url.Parse it)", t)
	case t == numberType:
		return &invopop.Schema{Type: "number"}, nil // encoding/json writes its digits as a number
	case reflectorKnows(t), t.Implements(invopopSchema) || t.Implements(invopopAlias):
		return nil, nil
	case t.Implements(jsonMarshaler):
		return nil, fmt.Errorf("%v marshals itself (MarshalJSON), so its fields do not describe its JSON: give it a JSONSchema() *jsonschema.Schema method (github.com/invopop/jsonschema, value receiver) or a JSONSchemaAlias() any method", t)
	case reflect.PointerTo(t).Implements(jsonMarshaler):
		return nil, pointerMarshaler(t, "MarshalJSON")
	case t.Implements(textMarshaler):
		return &invopop.Schema{Type: "string"}, nil // encoding/json writes MarshalText's result as a string
	case reflect.PointerTo(t).Implements(textMarshaler):
		return nil, pointerMarshaler(t, "MarshalText")
	}
	return nil, nil
}

func pointerMarshaler(t reflect.Type, method string) error {
	return fmt.Errorf("%v has %s on its pointer only (*%v), which encoding/json does not call for a value it cannot address, such as a result, so its JSON is sometimes its fields: give %s a value receiver", t, method, t, method)
}

// recursiveType returns the first type reachable from t, the way the
// reflector walks types, that contains itself; nil if there is none.
// outer holds the named types being walked, of any kind: a map or slice
// type can contain itself too (type tree map[string]tree).
func recursiveType(t reflect.Type, outer []reflect.Type) reflect.Type {
	for {
		if t.Name() != "" {
			if slices.Contains(outer, t) {
				return t
			}
			outer = append(outer, t)
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	if t.Implements(invopopSchema) || t.Implements(invopopAlias) {
		return nil // its schema is its own
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return recursiveType(t.Elem(), outer)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if (!f.IsExported() && !f.Anonymous) || f.Tag.Get("json") == "-" {
				continue
			}
			if rec := recursiveType(f.Type, outer); rec != nil {
				return rec
			}
		}
	}
	return nil
}

// allowNulls makes s, the schema reflected from t, accept a null wherever
// encoding/json writes one for a Go nil: a nil slice, map or pointer in a
// field without omitempty or omitzero, as an element of a slice or as a
// value of a map. Without it a handler returning an empty list as a nil
// slice would fail the SDK's validation of its own result.
func allowNulls(s *jsonschema.Schema, t reflect.Type) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if s == nil || t.Implements(jsonMarshaler) || t.Implements(textMarshaler) ||
		reflect.PointerTo(t).Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(textMarshaler) {
		return
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return // base64 string
		}
		if nilable(t.Elem()) {
			nullable(s.Items)
		}
		allowNulls(s.Items, t.Elem())
	case reflect.Map:
		if nilable(t.Elem()) {
			nullable(s.AdditionalProperties)
		}
		allowNulls(s.AdditionalProperties, t.Elem())
		for _, v := range s.PatternProperties {
			if nilable(t.Elem()) {
				nullable(v)
			}
			allowNulls(v, t.Elem())
		}
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Tag.Get("json") == "-" {
				continue
			}
			name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
			if f.Anonymous && name == "" {
				// Embedded: its fields are s's own.
				if ft := derefType(f.Type); ft.Kind() == reflect.Struct {
					allowNulls(s, ft)
					if f.Type.Kind() == reflect.Pointer {
						// A nil embedded pointer omits all its fields.
						names := fieldNames(ft)
						s.Required = slices.DeleteFunc(s.Required, func(n string) bool { return slices.Contains(names, n) })
					}
					continue
				}
			}
			if !f.IsExported() {
				continue
			}
			if name == "" {
				name = f.Name
			}
			prop := s.Properties[name]
			if prop == nil {
				continue
			}
			omit := false
			for o := range strings.SplitSeq(opts, ",") {
				omit = omit || o == "omitempty" || o == "omitzero"
			}
			if !omit && nilable(f.Type) {
				nullable(prop)
			}
			allowNulls(prop, f.Type)
		}
	}
}

// fieldNames returns the JSON names of struct type t's fields, those of
// embedded structs included.
func fieldNames(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		f := t.Field(i)
		if f.Tag.Get("json") == "-" {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			if ft := derefType(f.Type); ft.Kind() == reflect.Struct {
				names = append(names, fieldNames(ft)...)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		names = append(names, name)
	}
	return names
}

func derefType(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// nilable reports whether a value of type t can marshal to null.
func nilable(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map:
		return true
	}
	return false
}

// nullable makes s accept null too. A schema without a type already
// accepts it, unless it is an enum or const.
func nullable(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	switch {
	case s.Type != "":
		s.Types = []string{s.Type, "null"}
		s.Type = ""
	case len(s.Types) > 0 && !slices.Contains(s.Types, "null"):
		s.Types = append(s.Types, "null")
	}
	if len(s.Enum) > 0 && !slices.Contains(s.Enum, nil) {
		s.Enum = append(s.Enum, nil)
	}
}

// reflectorKnows reports whether the reflector has a schema of its own
// for t, right for encoding/json.
func reflectorKnows(t reflect.Type) bool {
	return t == timeType || t == ipType || t == rawMessageType
}

// describesItself reports whether the schema of t (not a pointer) is not
// reflected from its kind and fields: it is mapped by marshalerSchema,
// known to the reflector, or given by t's own methods.
func describesItself(t reflect.Type) bool {
	return reflectorKnows(t) || t == numberType ||
		t.Implements(invopopSchema) || t.Implements(invopopAlias) ||
		t.Implements(jsonMarshaler) || t.Implements(textMarshaler)
}

// checkWire checks that s, the schema reflected from t, names what
// encoding/json reads and writes for t, through nested fields, elements
// and map values: each struct's properties are encoding/json's field
// names, each map's keys are keys encoding/json can write. It also makes
// the schemas of maps with integer keys accept the keys encoding/json
// writes (negative ones too).
func checkWire(s *jsonschema.Schema, t reflect.Type) error {
	t = derefType(t)
	if s == nil || describesItself(t) {
		return nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		if t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8 {
			return nil // base64 string
		}
		return checkWire(s.Items, t.Elem())
	case reflect.Map:
		if err := mapKeys(s, t); err != nil {
			return err
		}
		for _, v := range s.PatternProperties {
			return checkWire(v, t.Elem()) // the only one mapKeys leaves
		}
		return checkWire(s.AdditionalProperties, t.Elem())
	case reflect.Struct:
		return checkFields(s, t)
	}
	return nil
}

// mapKeys refuses a map type t whose keys encoding/json cannot write,
// and fits the keys its schema s accepts to the ones it writes: integer
// keys are written as decimal digits, with a sign for a negative one.
func mapKeys(s *jsonschema.Schema, t reflect.Type) error {
	k := t.Key()
	text := k.Implements(textMarshaler)
	var pattern string
	switch k.Kind() {
	case reflect.String:
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		pattern = "^-?[0-9]+$"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		pattern = "^[0-9]+$"
	default:
		if !text {
			return fmt.Errorf("%v: encoding/json cannot write a map key of type %v: use string, integer or encoding.TextMarshaler keys", t, k)
		}
		return nil
	}
	// The reflector gives signed integer keys patternProperties
	// "^[0-9]+$", and other keys additionalProperties.
	value := s.AdditionalProperties
	for _, v := range s.PatternProperties {
		value = v
	}
	if value == nil {
		value = &jsonschema.Schema{} // any value
	}
	if text {
		// MarshalText writes the key.
		s.PatternProperties, s.AdditionalProperties = nil, value
		return nil
	}
	s.PatternProperties = map[string]*jsonschema.Schema{pattern: value}
	s.AdditionalProperties = &jsonschema.Schema{Not: &jsonschema.Schema{}}
	return nil
}

// jsonField is a field of a struct type as encoding/json or the
// reflector names it.
type jsonField struct {
	name  string
	tag   bool  // named by its tag
	index []int // as reflect.Type.FieldByIndex
	path  string
	field reflect.StructField
}

func (f jsonField) String() string {
	if len(f.index) > 1 {
		return fmt.Sprintf("the embedded %s %v", f.path, f.field.Type)
	}
	return fmt.Sprintf("%s %v", f.path, f.field.Type)
}

// jsonFields returns the fields encoding/json reads and writes for struct
// type t, in index order, following encoding/json's typeFields: embedded
// structs' fields are promoted breadth first, and of the fields of one
// name the shallowest wins, then the tagged one; two of them at the same
// depth, both tagged or both not, annihilate each other (dropped).
func jsonFields(t reflect.Type) (fields []jsonField, dropped map[string][]jsonField) {
	type level struct {
		typ   reflect.Type
		index []int
		path  string
	}
	next := []level{{typ: t}}
	var count, nextCount map[reflect.Type]int
	visited := map[reflect.Type]bool{}
	for len(next) > 0 {
		current := next
		next = nil
		count, nextCount = nextCount, map[reflect.Type]int{}
		for _, l := range current {
			if visited[l.typ] {
				continue
			}
			visited[l.typ] = true
			for i := range l.typ.NumField() {
				sf := l.typ.Field(i)
				if sf.Anonymous {
					if ft := derefOnce(sf.Type); !sf.IsExported() && ft.Kind() != reflect.Struct {
						continue
					}
				} else if !sf.IsExported() {
					continue
				}
				tag := sf.Tag.Get("json")
				if tag == "-" {
					continue
				}
				name, _, _ := strings.Cut(tag, ",")
				if !validTag(name) {
					name = ""
				}
				index := append(slices.Clone(l.index), i)
				path := sf.Name
				if l.path != "" {
					path = l.path + "." + sf.Name
				}
				ft := sf.Type
				if ft.Name() == "" && ft.Kind() == reflect.Pointer {
					ft = ft.Elem()
				}
				if name != "" || !sf.Anonymous || ft.Kind() != reflect.Struct {
					f := jsonField{name: cmp.Or(name, sf.Name), tag: name != "", index: index, path: path, field: sf}
					fields = append(fields, f)
					if count[l.typ] > 1 {
						fields = append(fields, f) // the same type twice: annihilated
					}
					continue
				}
				nextCount[ft]++
				if nextCount[ft] == 1 {
					next = append(next, level{typ: ft, index: index, path: path})
				}
			}
		}
	}
	slices.SortStableFunc(fields, func(a, b jsonField) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		if c := cmp.Compare(len(a.index), len(b.index)); c != 0 {
			return c
		}
		if a.tag != b.tag {
			if a.tag {
				return -1
			}
			return +1
		}
		return slices.Compare(a.index, b.index)
	})
	var out []jsonField
	for i := 0; i < len(fields); {
		j := i + 1
		for j < len(fields) && fields[j].name == fields[i].name {
			j++
		}
		same := fields[i:j]
		if len(same) > 1 && len(same[0].index) == len(same[1].index) && same[0].tag == same[1].tag {
			if dropped == nil {
				dropped = map[string][]jsonField{}
			}
			dropped[same[0].name] = same
		} else {
			out = append(out, same[0])
		}
		i = j
	}
	slices.SortFunc(out, func(a, b jsonField) int { return slices.Compare(a.index, b.index) })
	return out, dropped
}

func derefOnce(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		return t.Elem()
	}
	return t
}

// validTag is encoding/json's isValidTag: a tag name it does not accept
// leaves the field its Go name.
func validTag(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}

// schemaFields returns the fields the reflector describes for struct
// type t, by property name: it promotes the fields of embedded structs
// (and of fields tagged inline) depth first, a later field of a name
// replacing an earlier one, and skips fields tagged json:"-..." or
// jsonschema:"-".
func schemaFields(t reflect.Type, index []int, path string, fields map[string]jsonField) {
	for i := range t.NumField() {
		sf := t.Field(i)
		tags := strings.Split(sf.Tag.Get("json"), ",")
		if tags[0] == "-" || strings.Split(sf.Tag.Get("jsonschema"), ",")[0] == "-" {
			continue
		}
		fi := append(slices.Clone(index), i)
		fp := sf.Name
		if path != "" {
			fp = path + "." + sf.Name
		}
		ft := derefOnce(sf.Type)
		if sf.Anonymous && tags[0] == "" && ft.Kind() == reflect.Struct || slices.Contains(tags[1:], "inline") {
			if ft.Kind() == reflect.Struct {
				schemaFields(ft, fi, fp, fields)
			}
			continue
		}
		if !sf.Anonymous && !sf.IsExported() {
			continue
		}
		fields[cmp.Or(tags[0], sf.Name)] = jsonField{name: cmp.Or(tags[0], sf.Name), index: fi, path: fp, field: sf}
	}
}

// checkFields checks that the properties of s, the schema reflected from
// struct type t, are the fields encoding/json reads and writes, by name
// and by Go field, then checks each field's schema.
func checkFields(s *jsonschema.Schema, t reflect.Type) error {
	fields, dropped := jsonFields(t)
	described := map[string]jsonField{}
	schemaFields(t, nil, "", described)
	var problems []string
	if s.Properties != nil && !slices.Equal(slices.Sorted(maps.Keys(s.Properties)), slices.Sorted(maps.Keys(described))) {
		problems = append(problems, fmt.Sprintf("the schema's properties %q are not the fields %q it should describe", slices.Sorted(maps.Keys(s.Properties)), slices.Sorted(maps.Keys(described))))
	}
	written := map[string]bool{}
	for _, f := range fields {
		written[f.name] = true
		d, ok := described[f.name]
		switch {
		case ok && slices.Equal(d.index, f.index):
			if err := checkWire(s.Properties[f.name], f.field.Type); err != nil {
				return err
			}
		case ok:
			problems = append(problems, fmt.Sprintf("field %q: encoding/json writes %v, the schema describes %v (rename one)", f.name, f, d))
		default:
			why := ""
			switch tags := strings.Split(f.field.Tag.Get("json"), ","); {
			case strings.Split(f.field.Tag.Get("jsonschema"), ",")[0] == "-":
				why = ` (jsonschema:"-" hides it from the schema only; json:"-" drops it)`
			case slices.Contains(tags[1:], "inline"):
				why = " (encoding/json has no inline option)"
			case tags[0] != "" && !validTag(tags[0]):
				why = fmt.Sprintf(" (encoding/json ignores the tag name %q, not a valid key for it)", tags[0])
			}
			problems = append(problems, fmt.Sprintf("field %q: encoding/json writes %v, the schema does not describe it%s", f.name, f, why))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(described)) {
		if written[name] {
			continue
		}
		d := described[name]
		why := "encoding/json does not write it"
		if same := dropped[name]; len(same) > 1 {
			why = fmt.Sprintf("encoding/json writes neither %v nor %v (the same name at the same depth)", same[0], same[1])
		} else if d.field.Anonymous {
			why = "encoding/json ignores an embedded field of an unexported type that is not a struct"
		}
		problems = append(problems, fmt.Sprintf("field %q: the schema describes %v, but %s", name, d, why))
	}
	if len(problems) > 0 {
		return fmt.Errorf("%v: %s", t, strings.Join(problems, "; "))
	}
	return nil
}
