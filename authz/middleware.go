package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/internal/sdkfix/listcursor"
	"github.com/toolroute/toolroute/tool"
)

// Middleware returns the receiving middleware that decides which tools a
// caller sees and may call. It reads the [Caller] from the context, so the
// middleware that puts it there must run first:
//
//	server.AddReceivingMiddleware(withCaller, authz.Middleware(a, reg.Calls(), authz.Options{}))
//
// (in one call, the first middleware is the outermost; of separate calls,
// the last one is). tools are the tools the server serves, as the
// registry describes them (registry.Registry.Calls): each is either Local
// or reachable through its Routes.
//
// tools/list: a tool is listed iff it is Local or the caller may reach at
// least one of its routes. Each page of the SDK's costs one
// [Authorizer.AllowMany] over the page's distinct routes. A filtered page
// ends at its last visible tool, and its nextCursor names that tool,
// never a hidden one (the SDK's cursor names the last tool of its
// unfiltered page); a page without a visible tool is followed by the
// next. The result carries cacheScope "private". It fails closed and never returns an
// unfiltered list: without a caller in the context, or if the authorizer
// answers unauthenticated, it is the JSON-RPC error -32600 "not
// authenticated"; on an outage (or any other authorizer error) it is
// -32603 "authorization service unavailable", the cause logged.
//
// tools/call: a tool the caller cannot see (the authorizer denies it
// every route of the tool, or finds it unauthenticated; a tool absent
// from tools) answers exactly like a name the server does not have. Both
// ask the authorizer once (an unknown name about one route of the
// server's, the decision ignored), so that both answers are the same in
// every state of the authorizer: the JSON-RPC error -32602
// `unknown tool "NAME"` (a [*HiddenToolError]) when it decides, and,
// when it cannot (an outage), an isError result "authorization service
// unavailable", the cause logged: every call, of a visible, hidden or
// unknown tool, fails closed and says so, like the upstream [Transport]
// does. A request without a caller in its context answers -32602 at
// once. Local tools are called without asking the authorizer.
//
// What is not hidden is timing: both wait for one decision, but not for
// the same routes, so an authorizer whose latency differs per route (a
// decision cache warm for one and cold for the other, a proxy slower for
// some paths) can let a caller tell a hidden tool from an unknown name
// by the time the answer takes. Behind [Cached], a caller's repeated
// calls of either are answered from the cache, and the difference
// shrinks to the cache's.
//
// Toolsets: a second filter, applied before a's and able only to hide,
// keeps the tools that carry a tag (tool.Call.Tags) of every limit of the
// request: the caller's ([Options].Toolsets), and the client's, asked
// on any request by the _meta key "io.github.toolroute/toolsets" (a
// list of tags) or the HTTP header X-MCP-Toolsets (tags separated by
// commas). A tool without tags passes no limit. A tool a toolset hides is
// not listed, and its calls answer exactly like an unknown name's; a
// client's malformed toolsets (not a list of tags, an invalid tag, an
// empty list) answer the JSON-RPC error -32602 "invalid toolsets: ...".
// A client's toolsets last one request: in a stateless exchange, send
// them on tools/call too, or its calls are not narrowed.
//
// Tools absent from tools are hidden. Middleware panics if a is nil, if a
// tool is nil, or if one is Local and has routes.
func Middleware(a Authorizer, tools []*tool.Call, opts Options) mcp.Middleware {
	if a == nil {
		panic("authz: Middleware: nil Authorizer")
	}
	g := &guard{a: a, tools: make(map[string]*toolAccess, len(tools)), logger: opts.Logger, toolsets: opts.Toolsets}
	ids := map[tool.Route]int32{}
	for _, acc := range tools {
		if acc == nil {
			panic("authz: Middleware: nil tool")
		}
		name := acc.Tool
		if acc.Local && len(acc.Routes) > 0 {
			panic(fmt.Sprintf("authz: Middleware: tool %q is Local and has routes", name))
		}
		ta := &toolAccess{local: acc.Local, tags: acc.Tags}
		for _, r := range acc.Routes {
			id, ok := ids[r]
			if !ok {
				id = int32(len(g.routes))
				ids[r] = id
				g.routes = append(g.routes, r)
			}
			ta.ids = append(ta.ids, id)
			ta.routes = append(ta.routes, r)
		}
		g.tools[name] = ta
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				return g.list(ctx, next, method, req)
			case "tools/call":
				return g.call(ctx, next, method, req)
			}
			return next(ctx, method, req)
		}
	}
}

type guard struct {
	a        Authorizer
	tools    map[string]*toolAccess
	routes   []tool.Route // distinct routes of all tools, by id
	logger   *slog.Logger
	toolsets func(context.Context, Caller) ([]string, bool) // Options.Toolsets
}

type toolAccess struct {
	local  bool
	ids    []int32      // into guard.routes
	routes []tool.Route // the same routes
	tags   []string     // sorted
}

func (g *guard) log() *slog.Logger {
	if g.logger != nil {
		return g.logger
	}
	return slog.Default()
}

func errNotAuthenticated() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: textUnauthenticated}
}

func errOutage() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: textOutage}
}

func errUnknownTool(name string, exists bool) error {
	return &HiddenToolError{Tool: name, Exists: exists}
}

func (g *guard) list(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	caller, ok := CallerFromContext(ctx)
	if !ok {
		g.log().ErrorContext(ctx, "authz: tools/list without a caller in the context: the server must put one there (authz.WithCaller); refused")
		return nil, errNotAuthenticated()
	}
	sets, err := g.toolsetsOf(ctx, caller, req)
	if err != nil {
		return nil, err
	}
	// The SDK's nextCursor names the last tool of its (unfiltered) page.
	// When that tool is hidden, the cursor would tell its name: the page
	// then ends at its last visible tool instead, and a page with none is
	// followed by the next one, so that a cursor only ever names a tool
	// the caller sees.
	for {
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, err
		}
		out, err := g.filterPage(ctx, caller, &sets, res)
		if err != nil || out.NextCursor == "" {
			return out, err
		}
		if n := len(out.Tools); n > 0 {
			if last := out.Tools[n-1].Name; !listcursor.Names(out.NextCursor, last) {
				if out.NextCursor, err = listcursor.After(last); err != nil {
					g.log().ErrorContext(ctx, "authz: tools/list: encoding a cursor failed; refused", slog.String("cause", err.Error()))
					return nil, errOutage()
				}
			}
			return out, nil
		}
		lreq, ok := req.(*mcp.ListToolsRequest)
		if !ok {
			return nil, errOutage()
		}
		params := mcp.ListToolsParams{}
		if lreq.Params != nil {
			params = *lreq.Params
		}
		params.Cursor = out.NextCursor
		copied := *lreq
		copied.Params = &params
		req = &copied
	}
}

// filterPage returns the page res (a tools/list result) with only the
// tools caller may see.
func (g *guard) filterPage(ctx context.Context, caller Caller, sets *toolsets, res mcp.Result) (*mcp.ListToolsResult, error) {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		g.log().ErrorContext(ctx, "authz: tools/list returned an unexpected result; refused", slog.String("type", fmt.Sprintf("%T", res)))
		return nil, errOutage()
	}
	var err error
	// Ask once about the distinct routes of the page's mapped tools.
	ask := make([]tool.Route, 0, len(lr.Tools))
	var pos []int32 // route id → 1 + index into ask; 0: not asked
	for _, t := range lr.Tools {
		ta := g.tools[t.Name]
		if ta == nil || ta.local || sets.hides(ta.tags) {
			continue
		}
		if pos == nil {
			pos = make([]int32, len(g.routes))
		}
		for _, id := range ta.ids {
			if pos[id] == 0 {
				ask = append(ask, g.routes[id])
				pos[id] = int32(len(ask))
			}
		}
	}
	var allowed []bool
	if len(ask) > 0 {
		allowed, err = g.a.AllowMany(ctx, caller, ask)
		if err == nil && len(allowed) != len(ask) {
			err = &OutageError{Err: fmt.Errorf("authz: AllowMany answered %d decisions for %d routes", len(allowed), len(ask))}
		}
		if err != nil {
			var unauth *UnauthenticatedError
			if errors.As(err, &unauth) {
				g.log().InfoContext(ctx, "authz: tools/list refused: caller not authenticated", slog.Any("caller", caller), slog.String("reason", redactText(unauth.Reason, caller)))
				return nil, errNotAuthenticated()
			}
			g.log().WarnContext(ctx, "authz: tools/list refused: authorization service unavailable", slog.Any("caller", caller), slog.String("cause", redact(err, caller)))
			return nil, errOutage()
		}
	}
	tools := make([]*mcp.Tool, 0, len(lr.Tools))
	for _, t := range lr.Tools {
		ta := g.tools[t.Name]
		if ta == nil || sets.hides(ta.tags) {
			continue
		}
		visible := ta.local
		for _, id := range ta.ids {
			if allowed[pos[id]-1] {
				visible = true
				break
			}
		}
		if visible {
			tools = append(tools, t)
		}
	}
	out := *lr
	out.Tools = tools
	out.CacheScope = "private"
	return &out, nil
}

// visible reports whether caller may reach at least one of routes, in
// one batch.
func (g *guard) visible(ctx context.Context, caller Caller, routes []tool.Route) (bool, error) {
	allowed, err := g.a.AllowMany(ctx, caller, routes)
	if err == nil && len(allowed) != len(routes) {
		err = &OutageError{Err: fmt.Errorf("authz: AllowMany answered %d decisions for %d routes", len(allowed), len(routes))}
	}
	if err != nil {
		return false, err
	}
	for _, ok := range allowed {
		if ok {
			return true, nil
		}
	}
	return false, nil
}

func (g *guard) call(ctx context.Context, next mcp.MethodHandler, method string, req mcp.Request) (mcp.Result, error) {
	cr, ok := req.(*mcp.CallToolRequest)
	if !ok || cr.Params == nil {
		g.log().ErrorContext(ctx, "authz: tools/call with an unexpected request; refused", slog.String("type", fmt.Sprintf("%T", req)))
		return nil, errOutage()
	}
	name := cr.Params.Name
	caller, ok := CallerFromContext(ctx)
	if !ok {
		g.log().ErrorContext(ctx, "authz: tools/call without a caller in the context: the server must put one there (authz.WithCaller); refused", slog.String("tool", truncate.String(name)))
		return nil, errUnknownTool(name, g.tools[name] != nil)
	}
	sets, err := g.toolsetsOf(ctx, caller, req)
	if err != nil {
		return nil, err
	}
	ta := g.tools[name]
	exists := ta != nil
	if exists && sets.hides(ta.tags) {
		// Hidden by a toolset: answered as a name the server does not
		// have is, below.
		g.log().InfoContext(ctx, "authz: tools/call refused: the tool is in none of the caller's toolsets", slog.String("tool", name), slog.Any("caller", caller))
		ta = nil
	}
	if ta != nil && ta.local {
		return next(ctx, method, req)
	}
	if ta == nil {
		if len(g.routes) == 0 {
			return nil, errUnknownTool(name, exists) // no tool is hidden from anyone by its routes
		}
		// Answer like a hidden tool: ask the authorizer, once, about a
		// route of the server's, so that an outage answers alike and an
		// unknown name costs a round trip too; the decision is ignored.
		_, err := g.visible(ctx, caller, g.routes[:1])
		if err == nil || errors.As(err, new(*UnauthenticatedError)) {
			return nil, errUnknownTool(name, exists)
		}
		return g.outage(ctx, name, exists, caller, err), nil
	}
	visible, err := g.visible(ctx, caller, ta.routes)
	if err == nil {
		if visible {
			return next(ctx, method, req)
		}
		g.log().InfoContext(ctx, "authz: tools/call refused: the caller may reach none of the tool's routes", slog.String("tool", name), slog.Any("caller", caller))
		return nil, errUnknownTool(name, true)
	}
	if unauth := (*UnauthenticatedError)(nil); errors.As(err, &unauth) {
		g.log().InfoContext(ctx, "authz: tools/call refused: caller not authenticated", slog.String("tool", name), slog.Any("caller", caller), slog.String("reason", redactText(unauth.Reason, caller)))
		return nil, errUnknownTool(name, true)
	}
	return g.outage(ctx, name, true, caller, err), nil
}

// outage logs the authorizer's failure to decide a call of the tool name
// (exists: a tool of the server's) and returns the call's answer: an
// isError result with the fixed text "authorization service
// unavailable". For a name the server does not have, the cause also
// holds a [*HiddenToolError] (Exists false), for the server's log and
// telemetry.
func (g *guard) outage(ctx context.Context, name string, exists bool, caller Caller, err error) *mcp.CallToolResult {
	g.log().WarnContext(ctx, "authz: tools/call refused: authorization service unavailable", slog.String("tool", truncate.String(name)), slog.Any("caller", caller), slog.String("cause", redact(err, caller)))
	res := new(mcp.CallToolResult)
	var outage *OutageError
	if !errors.As(err, &outage) {
		outage = &OutageError{Err: err}
	}
	if !exists {
		outage = &OutageError{Err: errors.Join(outage.Err, &HiddenToolError{Tool: name})}
	}
	res.SetError(outage) // the text is fixed; the server's log reads the type
	return res
}
