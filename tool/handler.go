package tool

import (
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

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
// an object schema. The registry refuses such handlers.
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
	rawMessageType = reflect.TypeFor[json.RawMessage]()
)

// marshalerSchema is the reflector's Mapper for types that marshal
// themselves: the reflector would describe their fields, not their JSON.
// A TextMarshaler is a JSON string; a json.Marshaler must describe itself
// (a JSONSchema method with a value receiver, or JSONSchemaAlias), else
// it is an error. The types the reflector knows (time.Time, net.IP,
// url.URL, json.RawMessage) and those that describe themselves are left
// to it (nil, nil).
func marshalerSchema(t reflect.Type) (*invopop.Schema, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == timeType || t == ipType || t == urlType || t == rawMessageType,
		t.Implements(invopopSchema) || t.Implements(invopopAlias):
		return nil, nil
	case t.Implements(jsonMarshaler) || reflect.PointerTo(t).Implements(jsonMarshaler):
		return nil, fmt.Errorf("%v marshals itself (MarshalJSON), so its fields do not describe its JSON: give it a JSONSchema() *jsonschema.Schema method (github.com/invopop/jsonschema, value receiver) or a JSONSchemaAlias() any method", t)
	case t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return &invopop.Schema{Type: "string"}, nil // encoding/json writes MarshalText's result as a string
	}
	return nil, nil
}

// recursiveType returns the first type reachable from t, the way the
// reflector walks types, that contains itself; nil if there is none.
// outer holds the struct types being walked.
func recursiveType(t reflect.Type, outer []reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(invopopSchema) || t.Implements(invopopAlias) {
		return nil // its schema is its own
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return recursiveType(t.Elem(), outer)
	case reflect.Struct:
		if slices.Contains(outer, t) {
			return t
		}
		outer = append(outer, t)
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
