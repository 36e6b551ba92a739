package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
)

// schemaCache is shared by every server New builds: tool.Handle reflects
// each handler's schemas once, and the SDK resolves each schema once.
var schemaCache = mcp.NewSchemaCache()

// ErrCallTimeout is the cause of a tool call's context ending at
// [Options.CallTimeout] (see [context.Cause]).
var ErrCallTimeout = errors.New("server: the call exceeded its deadline (Options.CallTimeout)")

// ErrShuttingDown is the cause of a request's context ending because the
// server shut down before the request finished (a tool call, and any
// other request, such as a tools/list waiting on its authorizer), and the
// error of a call that arrives while the server drains.
var ErrShuttingDown = errors.New("server: shutting down")

// New builds an MCP server serving the tools of installs, usable without
// fx. It fails if opts.Authorizer is nil (fail closed: set one, or
// authz.AllowAll() explicitly) or if two installers add a tool of the
// same name.
//
// Every request runs through this chain of receiving middleware, outermost
// first:
//
//  1. panic recovery, and caller resolution: over HTTP the caller comes
//     from the token verified by [HTTPHandler]; on other transports from
//     the context given to Connect, else [Options.Caller]. Served by
//     [HTTPServer], [StdioServer] or [StdioIO], every request (not only
//     tools/call) also has its context cancelled, with cause
//     [ErrShuttingDown], when a shutdown gives up waiting;
//  2. for tools/call: the per-call deadline ([Options.CallTimeout]),
//     one log record (tool, caller subject, outcome, duration; never the
//     bearer), and, when the client gave a progress token, the call's
//     progress state (tool.Progress reports end with the call) and its
//     liveness reports ([Options.ProgressInterval]);
//  3. authz.Middleware: tools/list shows only the tools the caller may
//     see, and a hidden tool answers like an unknown one;
//  4. for tools/call: robust argument decoding. Some clients send array
//     or object arguments as JSON text in a string; where a tool's input
//     schema ([ToolInfo.InputSchema]) expects an array or an object (and
//     not a string) at a top-level property, and the value is a string
//     holding JSON of that kind, it is decoded before the SDK validates
//     the arguments. Other strings are left alone, and fail validation
//     where they do not fit. A null top-level argument that is not
//     required, where the schema refuses null, is dropped (models send
//     null for arguments they leave out; encoding/json reads it so);
//  5. [Options.Middleware], in order.
//
// The returned server can be served over several transports at once
// ([HTTPHandler], [StdioServer], in-memory) and keeps no per-request state.
func New(opts Options, installs ...Installer) (*mcp.Server, error) {
	if opts.Authorizer == nil {
		return nil, errors.New("server: Options.Authorizer is nil: set an authorizer (an authz.Policy, authz.ProxyAuth, ...), or authz.AllowAll() to allow every caller everything explicitly")
	}
	advertised, meta, err := instructions(&opts)
	if err != nil {
		return nil, err
	}
	if meta != nil {
		for _, t := range collectNames(installs) {
			if t == meta.Tools()[0].Name {
				return nil, fmt.Errorf("server: the instructions tool %q (Options.AutoInstructions) conflicts with a registered tool: set Options.InstructionsTool to another name", t)
			}
		}
		installs = append(slices.Clip(installs), meta)
	}
	tools, err := collect(installs)
	if err != nil {
		return nil, err
	}
	if err := checkInstructions(&opts, tools); err != nil {
		return nil, err
	}
	if opts.Caller != nil {
		c := *opts.Caller
		c.Roles = slices.Clone(c.Roles)
		opts.Caller = &c
	}
	access := make(map[string]authz.Access, len(tools))
	for _, t := range tools {
		access[t.Name] = authz.Access{Local: t.Local, Routes: slices.Clone(t.Routes)}
	}
	s := mcp.NewServer(opts.implementation(), &mcp.ServerOptions{
		Instructions: advertised,
		SchemaCache:  schemaCache,
		// Tools even when there are none; no logging capability (calls are
		// logged server-side).
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}},
	})
	c := &chain{opts: opts, log: opts.logger(), timeout: opts.callTimeout(), interval: opts.progressInterval(), known: access}
	mw := []mcp.Middleware{
		c.middleware,
		authz.Middleware(opts.Authorizer, access, &authz.MiddlewareOptions{Logger: c.log}),
	}
	if dec := newArgDecoder(tools); len(dec) > 0 {
		mw = append(mw, dec.middleware)
	}
	mw = append(mw, opts.Middleware...)
	s.AddReceivingMiddleware(mw...)
	for _, in := range installs {
		in.Install(s)
	}
	return s, nil
}

func collectNames(installs []Installer) []string {
	var names []string
	for _, in := range installs {
		if in != nil {
			for _, t := range in.Tools() {
				names = append(names, t.Name)
			}
		}
	}
	return names
}

// collect gathers the installers' tools, sorted by name, and refuses
// duplicate names.
func collect(installs []Installer) ([]ToolInfo, error) {
	var tools []ToolInfo
	for i, in := range installs {
		if in == nil {
			return nil, fmt.Errorf("server: installer %d is nil", i)
		}
		tools = append(tools, in.Tools()...)
	}
	slices.SortStableFunc(tools, func(a, b ToolInfo) int { return strings.Compare(a.Name, b.Name) })
	var errs []error
	for i := 1; i < len(tools); i++ {
		if tools[i].Name == tools[i-1].Name && (i == 1 || tools[i-2].Name != tools[i].Name) {
			errs = append(errs, fmt.Errorf("server: duplicate tool name %q: two installers (registries) add it", tools[i].Name))
		}
	}
	return tools, errors.Join(errs...)
}

// Outcomes of a tools/call, as logged in the "outcome" attribute.
const (
	OutcomeOK          = "ok"             // the tool returned a result
	OutcomeToolError   = "tool_error"     // the tool returned an error (an isError result)
	OutcomeDenied      = "denied"         // authorization refused the call or an upstream request, or the tool is hidden
	OutcomePanic       = "panic"          // the tool (or a middleware) panicked
	OutcomeCancelled   = "cancelled"      // the call's context ended: client cancellation, deadline or shutdown
	OutcomeUnknownTool = "unknown_tool"   // no such tool
	OutcomeOutage      = "outage"         // the authorizer could not decide
	OutcomeInput       = "input_required" // the tool asks the client for input (multi-round-trip)
	OutcomeError       = "error"          // any other protocol error
)

// chain is the server's own receiving middleware.
type chain struct {
	opts     Options
	log      *slog.Logger
	timeout  time.Duration
	interval time.Duration // liveness reports; 0: none
	known    map[string]authz.Access
}

// tokenCaller is where [HTTPHandler]'s verifier leaves the caller, in
// auth.TokenInfo.Extra.
const tokenCallerKey = "toolroute/caller"

// resolveCaller returns the caller of req: over HTTP (req carries extra
// information) the caller of its verified token, or one put in the
// context; elsewhere the context's caller, else the configured one.
func (c *chain) resolveCaller(ctx context.Context, req mcp.Request) (authz.Caller, bool) {
	extra := req.GetExtra()
	if extra != nil && extra.TokenInfo != nil {
		if caller, ok := extra.TokenInfo.Extra[tokenCallerKey].(authz.Caller); ok {
			return caller, true
		}
	}
	if caller, ok := authz.CallerFromContext(ctx); ok {
		return caller, true
	}
	if extra == nil && c.opts.Caller != nil {
		return *c.opts.Caller, true
	}
	return authz.Caller{}, false
}

func (c *chain) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		caller, ok := c.resolveCaller(ctx, req)
		if ok {
			ctx = authz.WithCaller(ctx, caller)
		}
		if d := drainFrom(ctx); d != nil {
			// Every request ends at a hard shutdown, not only calls: the
			// SDK runs requests of a session on a context nothing else
			// cancels, and closing a session waits for its handlers.
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(d.Aborted(), func() { cancel(ErrShuttingDown) })()
		}
		if method != "tools/call" {
			defer c.recoverOther(method, &err)
			res, err = next(ctx, method, req)
			if isInternal(err) {
				c.opts.reportError("toolroute: internal error", fmt.Errorf("%s: %w", method, err))
			}
			return res, err
		}
		cr, ok := req.(*mcp.CallToolRequest)
		if !ok || cr.Params == nil {
			return next(ctx, method, req)
		}
		return c.call(ctx, method, cr, caller, next)
	}
}

// isInternal reports whether err is a JSON-RPC internal error (-32603):
// the server's fault, not the client's.
func isInternal(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInternalError
}

func (c *chain) recoverOther(method string, errp *error) {
	if p := recover(); p != nil {
		c.reportPanic(&registry.PanicError{Value: p}, "method", method)
		*errp = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	}
}

func (c *chain) reportPanic(pe *registry.PanicError, attrs ...any) {
	c.log.Error("toolroute: panic in the middleware chain",
		append(attrs, slog.Any("panic", pe.Value), slog.String("stack", string(debug.Stack())))...)
	if c.opts.OnError != nil {
		c.opts.OnError(pe)
	}
}

// call runs one tools/call under its deadline and logs it.
func (c *chain) call(ctx context.Context, method string, req *mcp.CallToolRequest, caller authz.Caller, next mcp.MethodHandler) (res mcp.Result, err error) {
	start := time.Now()
	name := req.Params.Name
	if d := drainFrom(ctx); d != nil {
		if !d.Add(req) {
			c.logCall(ctx, name, caller, OutcomeCancelled, time.Since(start), ErrShuttingDown)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrShuttingDown.Error()}
		}
		defer d.Done(req)
	}
	if rc := boundRequest(ctx); rc != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		defer context.AfterFunc(rc, func() { cancel(errRequestEnded) })()
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeoutCause(ctx, c.timeout, ErrCallTimeout)
		defer cancel()
	}
	ctx, endProgress := c.beginProgress(ctx, req, start)
	defer endProgress()
	defer func() {
		if p := recover(); p != nil {
			pe := &registry.PanicError{Tool: name, Value: p}
			c.reportPanic(pe, "tool", name)
			res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
			c.logCall(ctx, name, caller, OutcomePanic, time.Since(start), pe)
		}
	}()
	res, err = next(ctx, method, req)
	outcome, cause := c.classify(ctx, name, res, err)
	if (outcome == OutcomePanic || outcome == OutcomeError && isInternal(cause)) && c.opts.OnError != nil {
		c.opts.OnError(cause)
	}
	c.logCall(ctx, name, caller, outcome, time.Since(start), cause)
	return res, err
}

// classify tells how a call ended, and why if not well.
func (c *chain) classify(ctx context.Context, name string, res mcp.Result, err error) (string, error) {
	var toolErr error
	if err == nil {
		r, _ := res.(*mcp.CallToolResult)
		switch {
		case r == nil:
			return OutcomeOK, nil
		case r.NeedsInput():
			return OutcomeInput, nil
		case !r.IsError:
			return OutcomeOK, nil
		}
		toolErr = r.GetError()
		if toolErr == nil {
			// An error result made without SetError: a HandleResult tool's.
			toolErr = errors.New("the tool returned an error result")
		}
	} else {
		toolErr = err
	}
	var (
		pe     *registry.PanicError
		denied *authz.DeniedError
		unauth *authz.UnauthenticatedError
		outage *authz.OutageError
		rpc    *jsonrpc.Error
	)
	switch {
	case errors.As(toolErr, &pe):
		return OutcomePanic, toolErr
	case ctx.Err() != nil:
		return OutcomeCancelled, context.Cause(ctx)
	case errors.As(toolErr, &denied), errors.As(toolErr, &unauth):
		return OutcomeDenied, toolErr
	case errors.As(toolErr, &outage):
		return OutcomeOutage, toolErr
	case errors.As(toolErr, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool"):
		if _, ok := c.known[name]; ok {
			// A registered tool that answers like an unknown one is hidden
			// from this caller.
			return OutcomeDenied, toolErr
		}
		return OutcomeUnknownTool, toolErr
	case err != nil:
		return OutcomeError, toolErr
	}
	return OutcomeToolError, toolErr
}

func (c *chain) logCall(ctx context.Context, name string, caller authz.Caller, outcome string, d time.Duration, cause error) {
	level := slog.LevelInfo
	switch outcome {
	case OutcomeDenied, OutcomeOutage:
		level = slog.LevelWarn
	case OutcomePanic, OutcomeError:
		level = slog.LevelError
	}
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("tool", name),
		slog.String("subject", caller.Subject),
		slog.String("outcome", outcome),
		slog.Duration("duration", d),
	}
	if cause != nil {
		attrs = append(attrs, slog.String("error", cause.Error()))
	}
	c.log.LogAttrs(ctx, level, "toolroute: tools/call", attrs...)
}
