package tool

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/core/schema"
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
	in, out *schema.Object // out is nil for HandleResult; both nil if err is set
	err     error
	sends   []Route // the routes the handler declares it sends on (see Sending)
	add     func(s *mcp.Server, t *mcp.Tool, deps C)
}

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

// Sending returns a copy of h that declares the upstream routes it sends
// requests on, and, if err is not nil, that it cannot serve because of
// err. It is the hook of packages that make handlers over [Handle] and
// know, when they make one, what it will send and whether it can (the
// upstream package's Forward does): the registry checks what they know
// at Register, in its message form, rather than the first call finding
// out. A tool whose handler sends on a route its VisibilityRoutes do not
// hold (compared as values: the same URI template and method) is
// refused, and so is one whose handler's [Handler.Err] is not nil, which
// err joins.
//
// Each call replaces the routes of the one before; routes is copied.
// Sending of the zero Handler is the zero Handler.
func (h Handler[C]) Sending(routes []Route, err error) Handler[C] {
	if h.b == nil {
		return h
	}
	b := *h.b
	b.sends = slices.Clone(routes)
	b.err = errors.Join(h.b.err, err)
	return Handler[C]{b: &b}
}

// Sends returns the routes h declares it sends upstream requests on (see
// [Handler.Sending]), a copy; nil for a handler that declares none, such
// as one made by [Handle] alone, whose function may send on any of its
// tool's routes.
func (h Handler[C]) Sends() []Route {
	if h.b == nil {
		return nil
	}
	return slices.Clone(h.b.sends)
}

// InputSchema returns the JSON schema of the handler's arguments. It is
// shared by every handler of the same In type: do not modify it.
func (h Handler[C]) InputSchema() *jsonschema.Schema {
	if h.b == nil || h.b.in == nil {
		return nil
	}
	return h.b.in.Schema
}

// OutputSchema returns the JSON schema of the handler's structured
// result, or nil for a [HandleResult] handler, which returns whole results.
// It is shared by every handler of the same Out type: do not modify it.
func (h Handler[C]) OutputSchema() *jsonschema.Schema {
	if h.b == nil || h.b.out == nil {
		return nil
	}
	return h.b.out.Schema
}

// AddTo adds t to s, served by h with deps: h binds its dependency
// container here, as go-sdk's mcp.AddTool binds a typed handler, and
// like mcp.AddTool (which builds the tool's definition and its plain
// [mcp.ToolHandler] with toolForErr, then calls Server.AddTool) it adds
// the tool with the low-level [mcp.Server.AddTool]: the generic types
// stop at this method, and s stores a plain closure. The registry's
// Install calls it for every tool it adds.
//
// t is copied; the copy's InputSchema and OutputSchema are set from h's
// (any t carries are ignored). Its input schema is the JSON encoded once
// when h was made (see internal/core/schema.Object): mcp.AddTool would
// encode the schema again at every add and, over streamable HTTP from
// 2026-07-28, at every call. The handler does what mcp.AddTool's would,
// with the SDK's schema library and texts: arguments are validated
// against the input schema (with its defaults) before the handler's
// function runs, and bad ones answered with an isError result
// `validating "arguments": ...`; a result is validated against the
// output schema and becomes the structured content and its text copy.
//
// AddTo panics if h is zero or [Handler.Err] is not nil (the registry
// refuses both at Register), or if s or t is nil.
func (h Handler[C]) AddTo(s *mcp.Server, t *mcp.Tool, deps C) {
	if s == nil || t == nil {
		panic("tool: Handler.AddTo with a nil server or tool")
	}
	if err := h.Err(); err != nil {
		panic(fmt.Sprintf("tool: add %q: %v", t.Name, err))
	}
	h.b.add(s, t, deps)
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
// a protocol error. The client sees an error's text, except where its
// chain holds an error with a method ClientText() string (authz's
// refusals have one): the client then sees that text, whatever wraps it;
// and an error whose text shows an upstream request's URL (it wraps a
// *url.Error, as an http.Client's errors do) shows "upstream request
// failed".
//
// A panic anywhere in the handler's work (decoding the arguments, fn,
// encoding the result: a MarshalJSON, UnmarshalText, ... of In's or
// Out's types) ends the call with an isError result of a generic text;
// the panic value and stack go to the server's log (on a bare
// *mcp.Server, the registry's Install logs them to slog.Default). This is
// the handler's own panic boundary: it holds on any *mcp.Server.
func Handle[C, In, Out any](fn func(ctx context.Context, deps C, req *mcp.CallToolRequest, in In) (Out, error)) Handler[C] {
	if fn == nil {
		return Handler[C]{}
	}
	in, inErr := schema.Input(reflect.TypeFor[In]())
	out, outErr := schema.Output(reflect.TypeFor[Out]())
	b := &binding[C]{in: in, out: out, err: errors.Join(inErr, outErr)}
	// A nil *T result is written as T's zero value, as the SDK's typed
	// tools do, not as null.
	var nilOut any
	if rt := reflect.TypeFor[Out](); rt.Kind() == reflect.Pointer {
		nilOut = reflect.Zero(rt.Elem()).Interface()
	}
	b.add = func(s *mcp.Server, t *mcp.Tool, deps C) {
		tt := *t
		tt.InputSchema, tt.OutputSchema = in.JSON, out.Schema
		name := t.Name
		s.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			defer recoverCall(name, &res, &err)
			var args In
			if bad := arguments(in, req, &args); bad != nil {
				return bad, nil
			}
			v, err := fn(ctx, deps, req, args)
			if err != nil {
				return answer(err)
			}
			result := any(v)
			if nilOut != nil && result == any(*new(Out)) {
				result = nilOut
			}
			return structured(out, result)
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
		tt.InputSchema, tt.OutputSchema = in.JSON, nil
		name := t.Name
		s.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (res *mcp.CallToolResult, err error) {
			defer recoverCall(name, &res, &err)
			var args In
			if bad := arguments(in, req, &args); bad != nil {
				return bad, nil
			}
			res, err = fn(ctx, deps, req, args)
			if err != nil {
				return answer(err)
			}
			if res == nil {
				res = &mcp.CallToolResult{}
			}
			return res, nil
		})
	}
	return Handler[C]{b: b}
}

// arguments decodes req's arguments into args (a pointer to the
// handler's In), validated against in and given its defaults first; for
// arguments the schema refuses, or that do not decode into args, it
// returns the isError result the SDK's typed tools answer with.
func arguments(in *schema.Object, req *mcp.CallToolRequest, args any) *mcp.CallToolResult {
	data, err := in.Input(req.Params.Arguments)
	if err != nil {
		return errorResult(fmt.Errorf("validating \"arguments\": %v", err))
	}
	if err := schema.Decode(data, args); err != nil {
		return errorResult(err)
	}
	return nil
}

// recoverCall is the handler's panic boundary, deferred by every
// handler [Handler.AddTo] adds: a panic anywhere in the handler's work
// (decoding the arguments, a field type's UnmarshalJSON or UnmarshalText;
// fn itself; encoding the result, MarshalJSON or MarshalText) ends the
// call of the tool name with an isError result of a *call.PanicError,
// whose text is generic and which the server (or, on a bare server, the
// registry) logs with its stack. It is the one boundary a tool's own
// code needs: what a client sees of a panicking tool is a tool error,
// and the session goes on. The server's chain has its own, for its
// middleware and the SDK's work around the handler.
func recoverCall(name string, res **mcp.CallToolResult, err *error) {
	if p := recover(); p != nil {
		*res, *err = errorResult(&call.PanicError{Tool: name, Value: p, Stack: debug.Stack()}), nil
	}
}

// answer turns the error a handler's fn ended with into the call's
// answer, as the SDK's typed tools do: a question (see [Handle]) becomes
// the result; a *jsonrpc.Error, a protocol error; any other error an
// isError result, shown as [call.ClientError] shows it.
func answer(err error) (*mcp.CallToolResult, error) {
	if ask := inputRequired(err); ask != nil {
		return ask, nil
	}
	err = call.ClientError(err)
	if wire, ok := err.(*jsonrpc.Error); ok {
		return nil, wire
	}
	return errorResult(err), nil
}

// structured makes the result of a [Handle] handler that returned v, as
// the SDK's typed tools do: v encoded, validated against out (with its
// defaults), as the structured content and, in a text content, its copy.
// An Out that does not encode or validate is the server's fault: a
// protocol error.
func structured(out *schema.Object, v any) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshaling output: %w", err)
	}
	b, err = out.Output(b)
	if err != nil {
		return nil, fmt.Errorf("validating tool output: %w", err)
	}
	return &mcp.CallToolResult{
		StructuredContent: json.RawMessage(b),
		Content:           []mcp.Content{&mcp.TextContent{Text: string(b)}},
	}, nil
}

func errorResult(err error) *mcp.CallToolResult {
	var res mcp.CallToolResult
	res.SetError(err)
	return &res
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
