package server

import (
	"bytes"
	"context"
	"encoding/json"
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
	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/internal/serve/growstack"
	"github.com/toolroute/toolroute/internal/serve/listcache"
	"github.com/toolroute/toolroute/internal/serve/outcome"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

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
// Every request runs through one call path, built here, outermost first:
//
//  1. panic recovery: a panic in any layer below answers the JSON-RPC
//     error -32603 "internal error", logged with its stack and the
//     caller, and reported to [Options.OnError];
//  2. caller resolution: over HTTP the caller comes from the token
//     verified by [HTTPHandler]; on other transports from the context
//     given to Connect, else [Options.Caller]. Served by [HTTPServer],
//     [StdioServer] or [Stdio], every request (not only tools/call) also
//     has its context cancelled, with cause [ErrShuttingDown], when a
//     shutdown gives up waiting;
//  3. for tools/call: the per-call deadline ([Options.CallTimeout]), one
//     log record (tool, caller subject, outcome, duration; never the
//     bearer; a panic's value and stack), and the call itself, begun
//     once: its context carries the tool (tool.CallFromContext) and,
//     when the client gave a progress token, the call's progress state
//     (tool.Progress reports end with the call) and its liveness reports
//     ([Options.ProgressInterval]);
//  4. authz.Middleware: tools/list shows only the tools the caller may
//     see, and a hidden tool answers like an unknown one;
//  5. for tools/call: robust argument decoding. Some clients send array
//     or object arguments as JSON text in a string; where a tool's input
//     schema (tool.Call.InputSchema) expects an array or an object (and
//     not a string) at a top-level property, and the value is a string
//     holding JSON of that kind, it is decoded before the arguments are
//     validated. Other strings are left alone, and fail validation
//     where they do not fit. A null top-level argument that is not
//     required, where the schema refuses null, is dropped (models send
//     null for arguments they leave out; encoding/json reads it so);
//  6. [Options.Middleware], in order. A tools/list page is written from
//     each tool's definition encoded once, at the first list that shows
//     it: a middleware that changes a listed tool replaces it with a
//     changed copy, as it would a tool of the SDK's, never changing it in
//     place;
//  7. the installers' own middleware, if any ([Install] adds none: a
//     registry's tools are added with registry.AddTools, since the call
//     is begun in step 3), then the SDK, then the typed handler, which
//     validates and decodes the arguments, turns a panic in any of its
//     work (decoding the arguments, the tool's function, encoding the
//     result) into an isError result with a generic text and shows a
//     client an error's client text (see tool.Handle).
//
// [Options.Observers] run between steps 2 and 3: after the caller is
// known, before anything can refuse the request. A panic in one is
// recovered like one in any other layer.
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
			if t == meta.Tools()[0].Tool {
				return nil, fmt.Errorf("server: the instructions tool %q (Options.AutoInstructions) conflicts with a registered tool: set Options.InstructionsTool to another name", t)
			}
		}
		installs = append(slices.Clip(installs), meta)
	}
	tools, err := collect(installs)
	if err != nil {
		return nil, err
	}
	if err := checkSuccessors(tools); err != nil {
		return nil, err
	}
	if err := checkInstructions(&opts, tools); err != nil {
		return nil, err
	}
	if opts.ListTTL < 0 {
		return nil, fmt.Errorf("server: Options.ListTTL is %v: want 0 (stale at once) or a positive duration", opts.ListTTL)
	}
	if opts.Caller != nil {
		c := *opts.Caller
		c.Roles = slices.Clone(c.Roles)
		opts.Caller = &c
	}
	// Tools even when there are none; no logging capability (calls are
	// logged server-side).
	caps := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: opts.ListChanged}}
	for _, in := range installs {
		if x, ok := in.(extender); ok {
			for name, settings := range x.Extensions(tools) {
				caps.AddExtension(name, settings)
			}
		}
	}
	s := mcp.NewServer(opts.implementation(), &mcp.ServerOptions{
		Instructions: advertised,
		Capabilities: caps,
		SetCacheable: listTTL(opts.ListTTL),
	})
	// The installers first: the SDK runs the middleware added last
	// outermost, so theirs runs inside the server's path.
	for _, in := range installs {
		in.Install(s)
	}
	c := &chain{opts: opts, log: opts.logger(), timeout: opts.callTimeout(), interval: opts.progressInterval(), known: make(map[string]*call.Tool[tool.Call], len(tools)), lists: listcache.New(toolNames(tools))}
	for _, t := range tools {
		c.known[t.Tool] = &call.Tool[tool.Call]{Info: t}
		if t.Deprecated != nil && t.Deprecated.Successor != "" {
			c.successors = true
		}
	}
	mw := []mcp.Middleware{c.middleware}
	var lists *listeners
	if opts.ListChanged {
		lists = newListeners(opts.Authorizer, opts.Toolsets, tools, c.log)
		mw = append(mw, lists.receiving)
		s.AddSendingMiddleware(lists.sending)
	}
	mw = append(mw, authz.Middleware(opts.Authorizer, tools, authz.Options{Logger: c.log, Toolsets: opts.Toolsets}))
	if dec := newArgDecoder(tools); len(dec) > 0 {
		mw = append(mw, dec.middleware)
	}
	mw = append(mw, plainSchemaErrors)
	mw = append(mw, opts.Middleware...)
	s.AddReceivingMiddleware(mw...)
	rememberReporter(s, reporter{log: c.log, onError: opts.OnError, lists: lists, headerParams: headerParams(tools)})
	return s, nil
}

// headerParams reports, for the stateless transport, whether the tool of
// a name may have an argument with an x-mcp-header annotation, whose
// Mcp-Param header go-sdk's handler checks from MCP 2026-07-28: true
// unless it is one of tools (an undescribed tool is hidden, and the SDK
// still looks it up) and its input schema, encoded as the SDK is given
// it, does not contain "x-mcp-header" anywhere.
func headerParams(tools []*tool.Call) func(name string) bool {
	plain := make(map[string]bool, len(tools))
	for _, t := range tools {
		if t.InputSchema == nil {
			continue
		}
		if b, err := json.Marshal(t.InputSchema); err == nil && !bytes.Contains(b, []byte("x-mcp-header")) {
			plain[t.Tool] = true
		}
	}
	return func(name string) bool { return !plain[name] }
}

// listTTL sets the ttlMs of every tools/list page to ttl (authz sets its
// cacheScope); nil, the SDK's 0, for 0.
func listTTL(ttl time.Duration) func(context.Context, mcp.Request, *mcp.Cacheable) {
	if ttl <= 0 {
		return nil
	}
	ms := int(ttl.Milliseconds())
	return func(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
		if _, ok := req.(*mcp.ListToolsRequest); ok {
			c.TTLMs = ms
		}
	}
}

// toolNames is the names of tools.
func toolNames(tools []*tool.Call) []string {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Tool
	}
	return names
}

func collectNames(installs []Installer) []string {
	var names []string
	for _, in := range installs {
		if in != nil {
			for _, t := range in.Tools() {
				names = append(names, t.Tool)
			}
		}
	}
	return names
}

// collect gathers the installers' tools, sorted by name, and refuses
// duplicate names.
func collect(installs []Installer) ([]*tool.Call, error) {
	var tools []*tool.Call
	for i, in := range installs {
		if in == nil {
			return nil, fmt.Errorf("server: installer %d is nil", i)
		}
		for _, t := range in.Tools() {
			if t == nil {
				return nil, fmt.Errorf("server: installer %d describes a nil tool", i)
			}
			tools = append(tools, t)
		}
	}
	slices.SortStableFunc(tools, func(a, b *tool.Call) int { return strings.Compare(a.Tool, b.Tool) })
	var errs []error
	for i := 1; i < len(tools); i++ {
		if tools[i].Tool == tools[i-1].Tool && (i == 1 || tools[i-2].Tool != tools[i].Tool) {
			errs = append(errs, fmt.Errorf("server: duplicate tool name %q: two installers (registries) add it", tools[i].Tool))
		}
	}
	return tools, errors.Join(errs...)
}

// chain is the server's own receiving middleware.
type chain struct {
	opts     Options
	log      *slog.Logger
	timeout  time.Duration
	interval time.Duration                    // liveness reports; 0: none
	known    map[string]*call.Tool[tool.Call] // by name: what every call of the tool shares
	lists    *listcache.Cache                 // tools/list pages from definitions encoded once
	// successors: a tool is deprecated in favour of another (see
	// hideSuccessors).
	successors bool
}

// tokenCaller is where [HTTPHandler]'s verifier leaves the caller, in
// auth.TokenInfo.Extra.
const tokenCallerKey = "toolroute/caller"

// resolveCaller returns the caller of req: over HTTP (req carries extra
// information) the caller of its verified token, or one put in the
// context; elsewhere the context's caller, else the configured one.
//
// The returned context carries the caller; it is ctx itself when the
// caller came from there.
func (c *chain) resolveCaller(ctx context.Context, req mcp.Request) (context.Context, authz.Caller) {
	extra := req.GetExtra()
	if extra != nil && extra.TokenInfo != nil {
		if caller, ok := extra.TokenInfo.Extra[tokenCallerKey].(authz.Caller); ok {
			return authz.WithCaller(ctx, caller), caller
		}
	}
	if caller, ok := authz.CallerFromContext(ctx); ok {
		return ctx, caller
	}
	if extra == nil && c.opts.Caller != nil {
		return authz.WithCaller(ctx, *c.opts.Caller), *c.opts.Caller
	}
	return ctx, authz.Caller{}
}

func (c *chain) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	served := c.serve(next)
	for _, o := range slices.Backward(c.opts.Observers) {
		served = o(served)
	}
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		if method == "tools/call" {
			// The first of toolroute's frames on the request's goroutine:
			// grow its stack here, in one copy of a few frames, rather
			// than two or three deep in the call (see growstack).
			growstack.Grow()
		}
		ctx, caller := c.resolveCaller(ctx, req)
		if len(c.opts.Observers) > 0 && method == "tools/call" {
			// Where the observers read the call's outcome (see logCall).
			ctx, _ = outcome.WithRecord(ctx)
		}
		// The observers' panic boundary. They run outside the call path's
		// (see serve), so that they see its answer to a panic below them;
		// a panicking observer must not take the process down either.
		defer c.recoverPanic(ctx, method, nil, caller, time.Time{}, &res, &err)
		res, err = served(ctx, method, req)
		if method == "tools/list" && err == nil {
			if c.successors {
				// After every filter that hides tools.
				res = c.hideSuccessors(res)
			}
			// Last, so that every layer sees an *mcp.ListToolsResult.
			res = c.lists.Wrap(res)
		}
		return res, err
	}
}

// serve is the call path after the caller's resolution and the
// observers.
//
// It is the call path's panic boundary: a panic anywhere below it (authz,
// the argument decoding, Options.Middleware, the installers' middleware,
// the SDK's work around a handler, and a handler that recovers nothing
// itself) answers the JSON-RPC error -32603 "internal error", is logged
// with its stack (for tools/call in the call's record, outcome "panic")
// and reported to Options.OnError. The typed handlers have a boundary of
// their own, which answers a tool's panic with an isError result (see
// tool.Handle); nothing else in the path recovers.
func (c *chain) serve(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
		start := time.Now()
		caller, _ := authz.CallerFromContext(ctx)
		t := transportFrom(ctx)
		cr, isCall := req.(*mcp.CallToolRequest)
		isCall = isCall && method == "tools/call" && cr.Params != nil
		if !isCall {
			cr = nil
		}
		defer c.recoverPanic(ctx, method, cr, caller, start, &res, &err)
		if d := t.drain; d != nil && !isCall {
			// Every request ends at a hard shutdown, not only calls: the
			// SDK runs requests of a session on a context nothing else
			// cancels, and closing a session waits for its handlers.
			var cancel context.CancelCauseFunc
			ctx, cancel = context.WithCancelCause(ctx)
			defer cancel(nil)
			defer context.AfterFunc(d.Aborted(), func() { cancel(ErrShuttingDown) })()
		}
		if isCall {
			return c.call(ctx, t, method, cr, caller, start, next)
		}
		res, err = next(ctx, method, req)
		if method != "tools/call" && isInternal(err) {
			c.opts.reportError("toolroute: internal error", fmt.Errorf("%s: %w", method, err))
		}
		return res, err
	}
}

// isInternal reports whether err is a JSON-RPC internal error (-32603):
// the server's fault, not the client's.
func isInternal(err error) bool {
	var rpc *jsonrpc.Error
	return errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInternalError
}

// recoverPanic is deferred by the server's two panic boundaries (see
// [chain.serve] and [chain.middleware]): it recovers a panic into the
// JSON-RPC error -32603 "internal error", logs it with its stack (in the
// record of call, a tools/call begun at start; else as a panic in the
// chain) and reports it to Options.OnError.
func (c *chain) recoverPanic(ctx context.Context, method string, call *mcp.CallToolRequest, caller authz.Caller, start time.Time, resp *mcp.Result, errp *error) {
	p := recover()
	if p == nil {
		return
	}
	pe := &registry.PanicError{Value: p, Stack: debug.Stack()}
	*resp, *errp = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "internal error"}
	if call != nil {
		pe.Tool = call.Params.Name
		c.logCall(context.WithoutCancel(ctx), pe.Tool, caller, outcome.Panic, time.Since(start), pe)
	} else {
		c.log.ErrorContext(ctx, "toolroute: panic in the middleware chain",
			slog.String("method", method), slog.String("subject", caller.Subject),
			slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
	if c.opts.OnError != nil {
		c.opts.OnError(pe)
	}
}

// call runs one tools/call, begun at start, under its deadline, begins
// it and logs it. t is the transport it came through (see [transport]).
func (c *chain) call(ctx context.Context, t transport, method string, req *mcp.CallToolRequest, caller authz.Caller, start time.Time, next mcp.MethodHandler) (res mcp.Result, err error) {
	name := req.Params.Name
	d, rc := t.drain, t.request
	if d != nil {
		if !d.Add(req) {
			c.logCall(ctx, name, caller, outcome.Cancelled, time.Since(start), ErrShuttingDown)
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrShuttingDown.Error()}
		}
		defer d.Done(req)
	}
	// The call's context ends at its deadline (cause ErrCallTimeout), at
	// a hard shutdown (ErrShuttingDown), or when its stateless HTTP
	// request ends (see boundRequest): cancel is what the latter two end
	// it with.
	if d != nil || rc != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		if d != nil && !rc.endsAtAbortOf(d) {
			defer context.AfterFunc(d.Aborted(), func() { cancel(ErrShuttingDown) })()
		}
		if rc != nil {
			defer rc.unbind(rc.bind(cancel))
		}
	}
	if c.timeout > 0 {
		var stop context.CancelFunc
		ctx, stop = context.WithTimeoutCause(ctx, c.timeout, ErrCallTimeout)
		defer stop()
	}
	if tc := c.known[name]; tc != nil {
		// The call begins here, once; its context carries it.
		v, end := call.New(tc, req)
		defer end()
		ctx = context.WithValue(ctx, call.Key{}, v)
		if v.State() != nil && c.interval > 0 {
			defer c.heartbeats(ctx, req, start)()
		}
	}
	res, err = next(ctx, method, req)
	res = shortenError(res)
	if r, _ := res.(*mcp.CallToolResult); (err != nil || r != nil && r.IsError) && errors.Is(context.Cause(ctx), ErrShuttingDown) {
		// The tool saw only its context end: tell the client why.
		res, err = nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: ErrShuttingDown.Error()}
	}
	o, cause := outcome.Of(ctx, res, err)
	if (o == outcome.Panic || o == outcome.Error && isInternal(cause)) && c.opts.OnError != nil {
		c.opts.OnError(cause)
	}
	if tc := c.known[name]; tc != nil && tc.Info.Deprecated != nil {
		if r := outcome.From(ctx); r != nil {
			r.SetDeprecated()
		}
		ctx = context.WithValue(ctx, deprecatedKey{}, true)
	}
	c.logCall(ctx, name, caller, o, time.Since(start), cause)
	return res, err
}

// deprecatedKey marks the context of a deprecated tool's call for its
// log record.
type deprecatedKey struct{}

// logCall writes a call's one log record, and leaves its outcome for the
// observers (telemetry) where they read it: the one classification of
// the call.
func (c *chain) logCall(ctx context.Context, name string, caller authz.Caller, o outcome.Outcome, d time.Duration, cause error) {
	if len(c.opts.Observers) > 0 {
		if r := outcome.From(ctx); r != nil {
			r.Set(o)
		}
	}
	level := slog.LevelInfo
	switch o {
	case outcome.Denied, outcome.Outage, outcome.RateLimited:
		level = slog.LevelWarn
	case outcome.Panic, outcome.Error:
		level = slog.LevelError
	}
	if !c.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("tool", truncate.String(name)),
		slog.String("subject", caller.Subject),
		slog.String("outcome", o.String()),
		slog.Duration("duration", d),
	}
	if ctx.Value(deprecatedKey{}) != nil {
		attrs = append(attrs, slog.Bool("deprecated", true))
	}
	if cause != nil {
		attrs = append(attrs, slog.String("error", truncate.Quoted(cause.Error())))
	}
	var pe *registry.PanicError
	if errors.As(cause, &pe) {
		attrs = append(attrs, slog.Any("panic", pe.Value), slog.String("stack", string(pe.Stack)))
	}
	c.log.LogAttrs(ctx, level, "toolroute: tools/call", attrs...)
}
