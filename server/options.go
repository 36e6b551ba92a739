package server

import (
	"context"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
)

// Options configures a server built by [New] (and by [Module]). It is a
// plain struct: every zero field selects the documented default, except
// Authorizer, which must be set.
type Options struct {
	// Name is the implementation name the server announces. "" selects
	// "toolroute".
	Name string
	// Version is the implementation version the server announces. ""
	// selects the main module's version from the build information.
	Version string
	// Title is an optional human-readable implementation name.
	Title string

	// Logger receives one record per tools/call and the server's own
	// reports, those of the HTTP layers serving it ([HTTPHandler],
	// [HTTPServer]) included, through a [RedactingHandler] (no record
	// carries a bearer token). nil selects [slog.Default] (fx does not
	// provide a logger: set it here).
	Logger *slog.Logger

	// Authorizer decides which tools a caller sees and may call, and is
	// asked for every upstream route. Required: New fails closed when it
	// is nil. Use authz.AllowAll() to allow everything explicitly.
	Authorizer authz.Authorizer

	// ListTTL is how long a client may keep a tools/list page before it
	// fetches the list again: the page's ttlMs, in whole milliseconds
	// (its cacheScope is "private": the list is the caller's). 0, the
	// default, sends ttlMs 0, stale at once, as go-sdk does; a negative
	// value is refused by New. A client that listens for
	// notifications/tools/list_changed is told when the list changes
	// and fetches it then; one that does not may use a list up to ListTTL
	// old (a tool it no longer sees answers as unknown when called, a
	// new one shows at its next fetch).
	ListTTL time.Duration

	// ListChanged advertises the tools capability's listChanged and keeps
	// track of the clients that listen (2026-07-28 subscriptions/listen
	// streams asking for toolsListChanged, and 2025 sessions), so that
	// [NotifyListChanged] tells those whose visible tools changed. Off,
	// nothing listens: a 2026 client's listen stream for tools ends at
	// once, as go-sdk acknowledges no tools subscription.
	ListChanged bool
	// Toolsets, if set, limits callers to the tools of some tags
	// (tool.Tool.Tags): a second visibility filter, after Authorizer's,
	// that can only hide. It returns a caller's tags and true, or false
	// for a caller it does not limit; authz.Policy.Toolsets reads the
	// role policy's "toolsets" (wrap it: the context is the request's,
	// for a policy swapped at run time). A client may narrow what it sees further,
	// by request (see authz.Middleware). A tool hidden by it
	// answers like an unknown one.
	Toolsets func(context.Context, authz.Caller) (tags []string, limited bool)

	// CallTimeout bounds every tools/call: the handler's context ends
	// after it. 0 selects 30 seconds; a negative value disables the
	// deadline.
	CallTimeout time.Duration

	// Caller is the identity of callers on transports that carry no
	// bearer token (stdio, in-memory): the configured local user. nil
	// means such callers have no identity, and the authorizer decides
	// (authz fails closed). It is never used for HTTP requests: there the
	// caller comes from the verified token (see [HTTPOptions]). A caller
	// put in the context given to [mcp.Server.Connect] with
	// [authz.WithCaller] takes precedence.
	Caller *authz.Caller

	// ProgressInterval is how often the server tells a client that a
	// call it asked progress for (a request with a progress token) is
	// still running: every interval until the call ends, it sends a
	// notifications/progress with the message "still working: 30s
	// elapsed" (the time since the call began). Its progress value is the
	// call's last one raised minimally (a heartbeat), so that the
	// values keep increasing and the tool's own reports (tool.Progress)
	// keep their scale. 0 selects 30 seconds; a negative value disables
	// these reports.
	ProgressInterval time.Duration

	// Observers are receiving hooks for telemetry and audit (such as
	// server/telemetry's), run in this order around every request right
	// after its caller is resolved (authz.CallerFromContext works in
	// them), and around everything else the server does with it: a
	// call's deadline and log record, authorization, argument decoding
	// and Middleware. So they see every request, the ones authorization
	// refuses included, and all the time it takes. A panic in one is
	// recovered (JSON-RPC error -32603, logged with its stack).
	Observers []mcp.Middleware

	// Middleware are extra receiving hooks, run in this order around
	// every dispatch after the caller is resolved, the call logged and
	// authorization checked (so they see only visible tools' calls and
	// the caller in the context). A tools/list page they see is an
	// *mcp.ListToolsResult whose tools carry their input schema as the
	// json.RawMessage it was added with (tool.Call.InputSchema has it as a
	// *jsonschema.Schema); a middleware that changes a listed tool must
	// replace it with a changed copy.
	Middleware []mcp.Middleware

	// OnError, if set, receives every recovered panic, as a
	// *registry.PanicError (Tool is "" for a panic outside tools/call),
	// whether a tool handler or a middleware panicked; every JSON-RPC
	// internal error (-32603) a request is answered with, as a
	// *jsonrpc.Error (a tool's, or the SDK's refusal of a malformed
	// result); and every internal error of the transports (a failing HTTP
	// listener, a broken stdio session, a failing token verifier). It
	// must be safe for concurrent use and return quickly.
	// Everything it receives is logged as well.
	OnError func(error)

	// Instructions are the server's full instructions for clients (what
	// the server is for, how to use its tools together). Empty
	// instructions are not sent. Every tool name written in backticks in
	// any instructions text must be a tool of the server: New fails,
	// naming it, otherwise (so write only tool names in single backticks).
	Instructions string
	// ShortInstructions is a short form of Instructions, advertised
	// instead of them under AutoInstructions.
	ShortInstructions string
	// CustomInstructions describe this instance's purpose (which
	// deployment, which data); they are prepended to the advertised
	// instructions (and to the full text under AutoInstructions).
	CustomInstructions string
	// AutoInstructions moves the full instructions into a local,
	// read-only tool (named InstructionsTool) whose description and result
	// carry them; the advertised instructions become CustomInstructions,
	// ShortInstructions and a pointer to that tool. It has no effect when
	// Instructions is empty. A registered tool of the same name fails New.
	AutoInstructions bool
	// InstructionsTool names the tool of AutoInstructions. "" selects
	// "instructions".
	InstructionsTool string

	// WarmTimeout bounds the warm-up of all services on start (fx only).
	// 0 selects 30 seconds, further bounded by fx's start timeout.
	WarmTimeout time.Duration
	// ShutdownTimeout bounds how long in-flight calls may run after a
	// transport stops accepting new ones (fx only; HTTPServer.Shutdown
	// and StdioServer.Shutdown take a context instead); then they are
	// cancelled. 0
	// selects 10 seconds, further bounded by fx's stop timeout.
	ShutdownTimeout time.Duration
}

const (
	defaultName             = "toolroute"
	defaultCallTimeout      = 30 * time.Second
	defaultProgressInterval = 30 * time.Second
	defaultWarmTimeout      = 30 * time.Second
	defaultShutdownTimeout  = 10 * time.Second
)

func (o *Options) logger() *slog.Logger {
	if o.Logger != nil {
		return redacting(o.Logger)
	}
	return redacting(slog.Default())
}

func (o *Options) callTimeout() time.Duration {
	if o.CallTimeout == 0 {
		return defaultCallTimeout
	}
	return o.CallTimeout
}

// progressInterval returns the liveness interval; 0 means none.
func (o *Options) progressInterval() time.Duration {
	switch {
	case o.ProgressInterval == 0:
		return defaultProgressInterval
	case o.ProgressInterval < 0:
		return 0
	}
	return o.ProgressInterval
}

func (o *Options) warmTimeout() time.Duration {
	if o.WarmTimeout <= 0 {
		return defaultWarmTimeout
	}
	return o.WarmTimeout
}

func (o *Options) shutdownTimeout() time.Duration {
	if o.ShutdownTimeout <= 0 {
		return defaultShutdownTimeout
	}
	return o.ShutdownTimeout
}

func (o *Options) implementation() *mcp.Implementation {
	impl := &mcp.Implementation{Name: o.Name, Title: o.Title, Version: o.Version}
	if impl.Name == "" {
		impl.Name = defaultName
	}
	if impl.Version == "" {
		impl.Version = "(devel)"
		if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
			impl.Version = bi.Main.Version
		}
	}
	return impl
}

// reportError logs err and hands it to OnError.
func (o *Options) reportError(msg string, err error) { o.reporter().error(msg, err) }
