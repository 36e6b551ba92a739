package tool

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/schema"
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
	in, inErr := schema.Input(reflect.TypeFor[In]())
	out, outErr := schema.Output(reflect.TypeFor[Out]())
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
	in, err := schema.Input(reflect.TypeFor[In]())
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
