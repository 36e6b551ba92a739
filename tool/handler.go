package tool

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/call"
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
	add     func(s *mcp.Server, t *mcp.Tool, deps C)
}

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

func init() {
	call.SetAddTool(func(h any, s *mcp.Server, t *mcp.Tool, deps any) {
		h.(interface {
			addTo(*mcp.Server, *mcp.Tool, any)
		}).addTo(s, t, deps)
	})
}

// addTo adds t to s, served by h with deps (a C): the registry's Install
// reaches it through internal/call. t's schemas are set here from h's
// (callers leave them nil). The SDK validates arguments against the input
// schema before the handler runs and answers bad ones with an isError
// result. It panics if h is zero or [Handler.Err] is not nil; the
// registry checks both first.
func (h Handler[C]) addTo(s *mcp.Server, t *mcp.Tool, deps any) {
	if err := h.Err(); err != nil {
		panic(fmt.Sprintf("tool: add %q: %v", t.Name, err))
	}
	d, _ := deps.(C) // a nil interface C stays nil
	h.b.add(s, t, d)
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
	b.add = func(s *mcp.Server, t *mcp.Tool, deps C) {
		tt := *t
		tt.InputSchema, tt.OutputSchema = in, out
		name := t.Name
		mcp.AddTool(s, &tt, func(ctx context.Context, req *mcp.CallToolRequest, args In) (res *mcp.CallToolResult, out Out, err error) {
			defer recoverCall(name, &res, &err)
			out, err = fn(ctx, deps, req, args)
			if err != nil {
				var zero Out
				if ask := inputRequired(err); ask != nil {
					return ask, zero, nil
				}
				return nil, zero, call.ClientError(err)
			}
			return nil, out, nil
		})
	}
	return Handler[C]{b: b}
}

// HandleResult makes a Handler whose fn returns a whole
// [mcp.CallToolResult]: several contents, images, or an error result of
// its own. Such a tool declares no output schema. In must reflect to an
// object schema. Errors and panics are handled as by [Handle].
func HandleResult[C, In any](fn func(ctx context.Context, deps C, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, error)) Handler[C] {
	if fn == nil {
		return Handler[C]{}
	}
	in, err := schema.Input(reflect.TypeFor[In]())
	b := &binding[C]{in: in, err: err}
	b.add = func(s *mcp.Server, t *mcp.Tool, deps C) {
		tt := *t
		// OutputSchema stays nil and Out is any: the SDK infers nothing.
		tt.InputSchema, tt.OutputSchema = in, nil
		name := t.Name
		mcp.AddTool(s, &tt, func(ctx context.Context, req *mcp.CallToolRequest, args In) (res *mcp.CallToolResult, _ any, err error) {
			defer recoverCall(name, &res, &err)
			res, err = fn(ctx, deps, req, args)
			if err != nil {
				if ask := inputRequired(err); ask != nil {
					return ask, nil, nil
				}
				return nil, nil, call.ClientError(err)
			}
			return res, nil, nil
		})
	}
	return Handler[C]{b: b}
}

// recoverCall turns a panic of the handler of the tool name into the
// call's error, a *call.PanicError with the stack: the client gets an
// isError result with a generic text, and the server logs the panic (one
// bad tool never takes the process down).
func recoverCall(name string, res **mcp.CallToolResult, err *error) {
	if p := recover(); p != nil {
		*res, *err = nil, &call.PanicError{Tool: name, Value: p, Stack: debug.Stack()}
	}
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
