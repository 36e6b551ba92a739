// Package server builds MCP servers from registries and serves them over
// streamable HTTP and stdio, with or without fx.
//
// # Without fx
//
// [New] builds an *mcp.Server from installers ([Installer]), one per registry
// ([Install] makes one from a registry and its dependency container):
//
//	s, err := server.New(server.Options{Authorizer: policy},
//		server.Install(tools.Registry, deps),
//		server.Install(admin.Registry, adminDeps), // another container type
//	)
//
// [Options.Authorizer] is required: New fails closed without one (use
// authz.AllowAll() to allow everything explicitly). Two installers adding
// a tool of the same name fail New, naming the tool.
//
// Serve s over HTTP with [NewHTTPServer] (or mount [HTTPHandler]
// yourself), over stdio with a [StdioServer], or connect
// in-memory transports to it (the servertest package does, for tests). One
// server may serve several transports at once.
//
// # With fx
//
// [Module] builds the server from the fx graph. The application supplies
// [Options], adds registries with [Tools] (their containers come from the
// graph), provides one [Service] per upstream service key the tools
// need ([ProvideService]), and picks transports:
//
//	fx.New(
//		server.Module,
//		fx.Supply(server.Options{Authorizer: policy}),
//		fx.Provide(NewDeps),
//		server.Tools(tools.Registry),
//		server.ProvideService(NewCatalogService), // func(...) server.Service
//		server.HTTP(*addr, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: verifier}}),
//	).Run()
//
// A tool whose service key no Service provides, duplicate tool names and
// duplicate service keys fail the application before it starts, naming
// the tool and the key; every Service is warmed on start, and a failing
// warm-up fails the start. Middleware of your own goes in
// [Options.Middleware], as without fx.
//
// # Callers
//
// Every request carries an authz.Caller in its context, which the
// authorization middleware, the handlers and authz's upstream transport
// read with authz.CallerFromContext. Over HTTP, the caller comes from the
// request's bearer token through [HTTPOptions.Verifier] (a
// [TokenVerifier]; [StaticTokens] for demos): a missing or unknown token
// is answered with HTTP 401, and the caller keeps the token as its Bearer
// for forwarding upstream. On stdio and in-memory transports, the caller
// is [Options.Caller], unless the context given to Connect carries one.
//
// Strangers' tokens cost the verifier's dependencies next to nothing:
// in front of every verifier, a token over 8 KiB is refused unasked, a
// refused one is refused again at once for 10 s (by its SHA-256
// digest), concurrent requests with one token are verified once, a
// client address (IPv4, or IPv6 /64) may have 20 tokens not seen here
// verified at once and one more a second (then 429 with Retry-After),
// and past 64 such verifications in flight a request gets 503 with
// Retry-After. A token verified in the last hour passes both limits,
// so an attacker cannot lock out callers whose tokens already work.
// A TokenVerifier's answer must therefore depend on the token alone.
//
// # Calls
//
// Every request runs through one call path, built by [New], outermost
// first: panic recovery, caller resolution, then for tools/call the
// deadline ([Options.CallTimeout], 30 s by default) and the log record,
// authorization, the hooks ([Options.Middleware]) and the typed handler.
// Each call is logged once to [Options.Logger]: the tool, the caller's
// subject, the outcome ("ok", "tool_error", "denied", "panic",
// "cancelled", "unknown_tool", "outage", "input_required",
// "rate_limited" or "error") and the duration; a panic's value and stack
// too. Refusals, outages and calls over a rate limit (the JSON-RPC error
// -32010 of package ratelimit) are logged at WARN, panics and other
// protocol errors at ERROR, the rest at INFO. Bearer tokens are
// never logged: the server's logger goes through a [RedactingHandler],
// and a caller's value it echoes (a tool name, an argument quoted by a
// validation error) is cut at 128 bytes. Panics in handlers and middleware are recovered and
// reported to [Options.OnError]. A handler's error that wraps an
// authorization refusal reaches the client as its fixed text, and one
// that would show an upstream URL as "upstream request failed", whatever
// the tool returns (any error with a ClientText method is shown by that
// text). The upstream transport, authz.Transport, is given its
// authorizer: pass it the server's.
//
// A client that gives a progress token hears of the call: the tool's own
// reports (tool.Progress) and, every [Options.ProgressInterval] (30 s by
// default), a liveness report "still working: 30s elapsed"; the values
// always increase, and nothing is sent once the call has ended. A client
// cancels a call with notifications/cancelled (stdio, in-memory, stateful
// HTTP; over stateless HTTP, in a request of its own, it cancels the same
// caller's calls of that id in this process, and in other replicas
// through [HTTPOptions.Cancellations]) or by ending its stateless
// HTTP request: the handler's context
// is cancelled, the session keeps serving, and on stdio the cancelled
// call gets no response. Arguments that a client sent as JSON text in a
// string where the tool's schema expects an array or an object are
// decoded before validation, and a null sent for an optional argument is
// taken as left out (see [New]).
//
// # Instructions
//
// [Options.Instructions] are advertised to clients, with
// [Options.CustomInstructions] prepended. With [Options.AutoInstructions]
// the full text moves into a local, read-only tool
// ([Options.InstructionsTool], by default "instructions"), and
// clients are told [Options.ShortInstructions] and the tool's name
// instead. Every tool named in backticks in any of these texts must be a
// tool of the server, or New fails, naming it.
//
// # HTTP
//
// The HTTP endpoint is stateless by default (MCP 2026-07-28 and older
// clients; replicas behind any load balancer share nothing), cancels a
// call's handler when its request ends, and limits request bodies in size
// ([HTTPOptions.MaxRequestBodyBytes]) and in time
// ([HTTPOptions.BodyTimeout]); [HTTPOptions.Stateful] selects sessions
// instead. A stateful session is bound to the caller that opened it (its
// subject, or for a caller without one, its token): another caller's
// requests on it are refused (403). Sessions are bounded per caller and in
// all, and close when idle ([HTTPOptions.MaxSessionsPerCaller],
// [HTTPOptions.MaxSessions], [HTTPOptions.SessionTimeout]). Stateful
// sessions need a token: [HTTPOptions.Anonymous] works only statelessly.
// [HTTPServer] adds /healthz (live) and /readyz (ready once warm and while
// [HTTPServerOptions.ReadyCheck] passes, 503 while draining): its options
// are [HTTPServerOptions], the endpoint's among them. Both report through
// the [Options.Logger] and [Options.OnError] of the server they serve.
//
// # Shutdown
//
// Stopping an fx application (or [HTTPServer.Shutdown],
// [StdioServer.Shutdown]) stops accepting
// requests and calls, lets in-flight calls finish within
// [Options.ShutdownTimeout], then cancels them, and every other request
// still running (a tools/list waiting on its authorizer): their context's
// cause is [ErrShuttingDown], and each call is answered with a JSON-RPC
// error naming the shutdown before the connection closes (within a second
// past the deadline). Shutdown returns then even if a handler ignores its
// context. With stateful HTTP sessions, new sessions
// are refused (503) once the server stops accepting, and once the calls
// are answered the standalone event streams end and the sessions are
// closed, so an open client does not hold the shutdown until its
// deadline. An [HTTPServer] or [StdioServer] that was shut down cannot be
// started again.
//
// # Options
//
// Options structs are plain values passed by value ([Options],
// [HTTPOptions], [HTTPServerOptions]), as everywhere in toolroute
// (authz.Options, permission.Options, export.Options, the oauth and
// telemetry options): the zero value is the defaults, and every zero
// field selects its documented default. A bound (a duration, a size, a count) follows one
// rule everywhere: 0 selects the default, a negative value turns the
// bound off.
package server
