package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"

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
// of its own. The registry's Wrap recovers panics and puts the [Call] in
// the context.
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

// InputSchema returns the JSON schema of the handler's arguments.
func (h Handler[C]) InputSchema() *jsonschema.Schema {
	if h.b == nil {
		return nil
	}
	return h.b.in
}

// OutputSchema returns the JSON schema of the handler's structured
// result, or nil for a [HandleResult] handler, which returns whole results.
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
// AddTo panics if h is zero or has an [Handler.Err]; the registry's
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
				return nil, nil, err
			}
			return res, nil, nil
		})
	}
	return Handler[C]{b: b}
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
	data, err := json.Marshal(reflector.ReflectFromType(t))
	if err != nil {
		return nil, fmt.Errorf("schema of %v: %w", t, err)
	}
	s := new(jsonschema.Schema)
	if err := json.Unmarshal(data, s); err != nil {
		return nil, fmt.Errorf("schema of %v: %w", t, err)
	}
	// The SDK validates with draft 2020-12 whatever $schema says; dropping
	// it keeps tools/list small.
	s.Schema = ""
	return s, nil
}

func objectSchema[T any](what string) (*jsonschema.Schema, error) {
	t := reflect.TypeFor[T]()
	s, err := schemaFor(t)
	if err != nil {
		return nil, fmt.Errorf("%s type: %w", what, err)
	}
	if s.Type != "object" {
		typ := s.Type
		if typ == "" {
			typ = "no type"
		}
		return nil, fmt.Errorf("%s type %v reflects to a %s schema, want an object (structs and maps are objects; wrap a list in a struct)", what, t, typ)
	}
	if _, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
		return nil, fmt.Errorf("%s type %v: invalid schema: %w", what, t, err)
	}
	return s, nil
}
