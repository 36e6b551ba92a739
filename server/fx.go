package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/toolroute/toolroute/registry"
)

// The value groups [Module] consumes: fill them with [Tools] and
// [ProvideService].
const (
	installersGroup = "toolroute.installers"
	servicesGroup   = "toolroute.services"
	tablesGroup     = "toolroute.tables"
)

// Module builds the application's MCP server under fx. It needs an
// [Options] value from the application (fx.Supply(server.Options{...}),
// or a constructor returning one; middleware goes in
// [Options.Middleware]), takes each [Installer] from [Tools] and [Service]
// from [ProvideService], and provides the *mcp.Server. Transports are
// separate options: [HTTP], [Stdio].
//
// Building fails (fx.New and Start report the error) when two registries
// add a tool of the same name, when a tool needs a service key no
// Service provides (the message names the tool and the key), or when two
// Services share a key. On start every Service is warmed (concurrently,
// bounded by [Options.WarmTimeout]); a failing (or panicking) warm-up
// fails the start, naming the service.
// Until warm-up is done, the [HTTP] transport's /readyz answers 503, and
// no transport logs that it is serving: the "toolroute: serving MCP"
// line of [HTTP] and [Stdio] comes after every service warmed, and a
// start that fails logs none. Add [FxLogger] to keep fx's own events out
// of the log at info level.
var Module = fx.Module("toolroute.server",
	fx.Provide(newAppServer, newWarmUp),
	// Builds the server even if no transport asks for it, so that a broken
	// configuration never starts.
	fx.Invoke(func(*warmUp) {}),
)

// FxLogger returns the option (fx.WithLogger) that sends fx's own
// events — each constructor provided, each function invoked, each
// lifecycle hook run — to logger at debug level, and its errors (a
// failed constructor, OnStart or OnStop hook) at error level, through a
// [RedactingHandler]. Without it fx prints every event to standard error
// at start and stop. nil selects [slog.Default]; give it the logger of
// [Options.Logger]:
//
//	app := fx.New(server.FxLogger(logger), fx.Supply(server.Options{Logger: logger, ...}), server.Module, ...)
//
// An application that reports the error of fx.New, Start or Stop itself
// sees it in fx's log too; to keep fx's errors at debug level as well,
// use fx.WithLogger with an fxevent.SlogLogger and UseErrorLevel.
func FxLogger(logger *slog.Logger) fx.Option {
	if logger == nil {
		logger = slog.Default()
	}
	logger = redacting(logger)
	return fx.WithLogger(func() fxevent.Logger {
		l := &fxevent.SlogLogger{Logger: logger}
		l.UseLogLevel(slog.LevelDebug)
		return l
	})
}

// Tools adds reg's tools to the server of [Module], served with the
// container C resolved from the fx graph (provide or supply it). Several
// registries, of the same or different container types, may be added;
// their tool names must not collide.
//
// Each registry's [registry.RouteTable] is also in the value group
// "toolroute.tables", built without C: a command that needs only the
// tool → route tables (printing them, linting a policy against them)
// reads them from the graph without building the container, with an
// fx.Invoke of a function taking
//
//	struct {
//		fx.In
//		Tables []registry.RouteTable `group:"toolroute.tables"`
//	}
func Tools[C any](reg *registry.Registry[C]) fx.Option {
	if reg == nil {
		panic("server: Tools of a nil registry")
	}
	return fx.Options(
		fx.Provide(fx.Annotate(
			func(deps C) Installer { return Install(reg, deps) },
			fx.ResultTags(`group:"`+installersGroup+`"`),
		)),
		fx.Provide(fx.Annotate(reg.Table, fx.ResultTags(`group:"`+tablesGroup+`"`))),
	)
}

// ProvideService adds the [Service] returned by constructor (a function
// returning Service, and optionally an error, whose parameters come from
// the fx graph) to the services of [Module].
func ProvideService(constructor any) fx.Option {
	return fx.Provide(fx.Annotate(constructor, fx.ResultTags(`group:"`+servicesGroup+`"`)))
}

// appServer is the server [Module] builds for the application, with the
// services it warms and whether they are warm, shared with the transports.
type appServer struct {
	server   *mcp.Server
	opts     Options
	services map[string]Service
	ready    atomic.Bool // every service warmed
}

type moduleParams struct {
	fx.In
	Options    Options
	Installers []Installer `group:"toolroute.installers"`
	Services   []Service   `group:"toolroute.services"`
}

type moduleResult struct {
	fx.Out
	Server *mcp.Server
	App    *appServer
}

func newAppServer(p moduleParams) (moduleResult, error) {
	services, err := checkServices(p.Services)
	if err != nil {
		return moduleResult{}, err
	}
	opts := p.Options
	// Value groups have no order: install in the order of the installers'
	// first tool names, so that the server is the same on every run.
	installs := slices.Clone(p.Installers)
	slices.SortStableFunc(installs, func(a, b Installer) int { return strings.Compare(firstName(a), firstName(b)) })
	tools, err := collect(installs)
	if err != nil {
		return moduleResult{}, err
	}
	var missing []error
	for _, t := range tools {
		if t.ServiceKey == "" {
			continue
		}
		if _, ok := services[t.ServiceKey]; !ok {
			missing = append(missing, fmt.Errorf("server: tool %q needs service %q, but no server.Service has that key (provide one with server.ProvideService)", t.Tool, t.ServiceKey))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return moduleResult{}, err
	}
	s, err := New(opts, installs...)
	if err != nil {
		return moduleResult{}, err
	}
	return moduleResult{Server: s, App: &appServer{server: s, opts: opts, services: services}}, nil
}

type warmParams struct {
	fx.In
	Lifecycle fx.Lifecycle
	App       *appServer
	// The HTTP server, if any, is built first so that it listens (and
	// answers /healthz, and /readyz with 503) while the services warm.
	HTTP *HTTPServer `optional:"true"`
}

// warmUp is [Module]'s warm-up on start, done once every service is warm.
// A transport's hook that must run only then is appended by a
// constructor that takes a *warmUp: fx runs OnStart hooks in the order
// they were appended, a constructor runs after those it depends on, and
// a failing OnStart hook stops the start before the hooks after it.
type warmUp struct{}

// newWarmUp appends the hook that warms every service on start and then
// reports ready.
func newWarmUp(p warmParams) *warmUp {
	a := p.App
	p.Lifecycle.Append(fx.Hook{OnStart: func(ctx context.Context) error {
		if err := warm(ctx, a.opts.warmTimeout(), a.services); err != nil {
			return err
		}
		a.ready.Store(true)
		return nil
	}})
	return &warmUp{}
}

func firstName(in Installer) string {
	if in == nil {
		return ""
	}
	if t := in.Tools(); len(t) > 0 {
		return t[0].Tool
	}
	return ""
}

// stopContext bounds an fx stop context by the shutdown timeout, counted
// after delay: a transport that keeps accepting for a while first
// (HTTPServerOptions.DrainDelay) gives its calls their time from when it stops
// accepting.
func (a *appServer) stopContext(ctx context.Context, delay time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, max(delay, 0)+a.opts.shutdownTimeout())
}

// HTTP serves the [Module]'s server over streamable HTTP on addr (for
// instance "127.0.0.1:8080"; ":0" picks a free port) from start to stop,
// with the endpoint at opts.Path (default /mcp), /healthz and /readyz.
// The listener opens before the services warm: /readyz answers 503 until
// every service is warm (opts.Ready, if set, must agree too), and
// "toolroute: serving MCP over HTTP" (with the endpoint's url) is logged
// only then. It provides the *HTTPServer (read its Addr). It reports
// through [Options.Logger] and [Options.OnError], as the server does.
//
// On stop, /readyz answers 503; after opts.DrainDelay the listener
// closes, and in-flight calls get [Options.ShutdownTimeout] from then to
// finish before they are cancelled (all within fx's stop timeout). A
// start that fails (a warm-up, or a hook after it) closes the listener
// at once: a server never ready was sent no traffic to drain.
func HTTP(addr string, opts HTTPServerOptions) fx.Option {
	return fx.Options(
		fx.Provide(func(lc fx.Lifecycle, a *appServer) (*HTTPServer, error) {
			// A copy: the option may build several applications (tests, an
			// in-process restart), each with its own readiness.
			opts := opts
			if ready := opts.Ready; ready != nil {
				opts.Ready = func() bool { return a.ready.Load() && ready() }
			} else {
				opts.Ready = a.ready.Load
			}
			hs, err := NewHTTPServer(a.server, opts)
			if err != nil {
				return nil, err
			}
			lc.Append(fx.Hook{
				OnStart: func(context.Context) error { return hs.Start(addr) },
				OnStop: func(ctx context.Context) error {
					delay := opts.DrainDelay
					if !a.ready.Load() {
						delay = 0
					}
					ctx, cancel := a.stopContext(ctx, delay)
					defer cancel()
					if err := hs.shutdown(ctx, delay); err != nil {
						a.opts.logger().Warn("toolroute: in-flight calls cancelled at shutdown", slog.Any("error", err))
					}
					return nil
				},
			})
			return hs, nil
		}),
		// After the warm-up's hook (see warmUp): serving once warm.
		fx.Invoke(func(lc fx.Lifecycle, a *appServer, hs *HTTPServer, _ *warmUp) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error {
				a.opts.logger().Info("toolroute: serving MCP over HTTP", slog.String("url", hs.URL()))
				return nil
			}})
		}),
	)
}

// Stdio serves the [Module]'s server over r and w (nil selects standard
// input, nil w standard output; tests use pipes) from start to stop;
// callers are [Options.Caller]. It begins reading r once every service
// is warm, and logs "toolroute: serving MCP over stdio" then (to
// [Options.Logger], never to w). When the client closes its end, the
// application shuts down. On stop, new calls are refused and in-flight
// calls get [Options.ShutdownTimeout] to finish before they are
// cancelled.
func Stdio(r io.ReadCloser, w io.WriteCloser) fx.Option {
	if r == nil {
		r = os.Stdin
	}
	if w == nil {
		w = os.Stdout
	}
	// The *warmUp puts its hook after the warm-up's (see warmUp).
	return fx.Invoke(func(lc fx.Lifecycle, sd fx.Shutdowner, a *appServer, _ *warmUp) {
		ss := NewStdioServer(a.server, r, w)
		var stopping atomic.Bool
		served := make(chan struct{})
		lc.Append(fx.Hook{
			OnStart: func(context.Context) error {
				go func() {
					defer close(served)
					err := ss.Serve(context.Background())
					if stopping.Load() {
						return
					}
					if err != nil {
						a.opts.reportError("toolroute: stdio session failed", err)
					}
					// The client went away: nothing left to serve.
					if err := sd.Shutdown(); err != nil {
						a.opts.logger().Error("toolroute: shutdown after the stdio client left", slog.Any("error", err))
					}
				}()
				a.opts.logger().Info("toolroute: serving MCP over stdio")
				return nil
			},
			OnStop: func(ctx context.Context) error {
				stopping.Store(true)
				stopCtx, cancel := a.stopContext(ctx, 0)
				defer cancel()
				if err := ss.Shutdown(stopCtx); err != nil {
					a.opts.logger().Warn("toolroute: in-flight calls cancelled at shutdown", slog.Any("error", err))
				}
				select {
				case <-served:
				case <-ctx.Done():
				}
				return nil
			},
		})
	})
}
