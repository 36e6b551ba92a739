package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"syscall"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/resultcache"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/tool"
)

// kit is one start of a service: its configuration, and what the kit
// built of it.
type kit struct {
	cmd       Command
	cfg       Config
	table     registry.RouteTable
	logger    *slog.Logger
	obs       *observability // nil: telemetry off
	acc       *access
	sh        *shared            // nil: nothing shared
	upstreams map[string]string  // origin by service key; "" = embedded
	up        Upstreams          // once built
	rl        *reloader          // nil: nothing to reload
	status    string             // the reload status's URL, or ""
	results   *resultcache.Cache // the read-only tools' results (tool.Tool.Cache)
	// dry builds the graph for check: no embedded upstream listens.
	dry bool
}

// prepare builds what cfg describes, short of the fx app: the tools'
// table, the authorizer and verifier, the shared state and the
// upstreams' origins. With telemetry, it also starts the exporters and
// the metrics endpoint; close undoes it.
func (c Command) prepare(ctx context.Context, cfg Config, stderr io.Writer, logger *slog.Logger, telemetry bool) (*kit, error) {
	k := &kit{cmd: c, cfg: cfg, logger: logger}
	var err error
	if k.table, err = c.tables(); err != nil {
		return nil, err
	}
	if telemetry {
		if k.obs, err = newObservability(ctx, c.Name, cfg, stderr, logger); err != nil {
			return nil, err
		}
	}
	if k.acc, err = loadAccess(c, cfg, k.table, k.obs, false); err != nil {
		k.close()
		return nil, err
	}
	if k.upstreams, err = resolveUpstreams(cfg.Upstreams, serviceKeys([]registry.RouteTable{k.table}), c.Embedded); err != nil {
		k.close()
		return nil, err
	}
	if k.sh, err = newShared(c.Name, cfg, logger); err != nil {
		k.close()
		return nil, err
	}
	if err = k.acc.oauth.startDPoP(k.sh.replayCache(), logger); err != nil {
		k.close()
		return nil, err
	}
	if k.results, err = resultcache.New(resultcache.Options{Store: k.sh.resultStore(), MeterProvider: k.obs.meterProvider(), Logger: logger, Scope: k.acc.resultScope}); err != nil {
		k.close()
		return nil, err
	}
	return k, nil
}

// close stops what prepare started.
func (k *kit) close() {
	k.sh.close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := k.obs.close(ctx); err != nil {
		k.logger.Warn(k.cmd.Name+": stopping telemetry", slog.Any("error", err))
	}
}

// Serve runs the service that cfg describes until ctx is done or, over
// stdio, the client leaves (its standard input and output are the MCP
// stream then). A cfg built in Go is checked as the command line's is,
// and its zero fields get their defaults.
func (c Command) Serve(ctx context.Context, cfg Config, stdin io.Reader, stdout, stderr io.Writer) error {
	if cfg.set == nil {
		if err := cfg.check(); err != nil {
			return err
		}
		cfg = cfg.withDefaults(c.Defaults)
	}
	// The tools log with it too: no record may carry a bearer, whatever
	// an upstream echoes.
	logger := slog.New(server.RedactingHandler(slog.NewTextHandler(stderr, nil)))
	k, err := c.prepare(ctx, cfg, stderr, logger, true)
	if err != nil {
		return err
	}
	defer k.close()
	if k.rl = newReloader(k); k.rl != nil {
		defer k.rl.close()
		k.status = k.obs.operatorHandle("/statusz", k.rl)
	}
	for _, f := range k.acc.files.lint {
		logger.Warn(c.Name+": policy lint: "+f, slog.String("check", c.Name+" check"))
	}
	var hs *server.HTTPServer
	options := k.options()
	if cfg.Stdio {
		options = append(options, server.Stdio(io.NopCloser(stdin), nopWriteCloser{stdout}))
	} else {
		options = append(options, server.HTTP(cfg.Addr, k.httpOptions()), fx.Populate(&hs))
	}
	if k.rl != nil {
		options = append(options, fx.Populate(&k.rl.server))
	}
	app := fx.New(options...)
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return k.startError(err)
	}
	k.announce(stderr, hs)
	k.obs.announce(stderr)
	reloading := make(chan struct{})
	rctx, stopReloads := context.WithCancel(ctx)
	if k.rl != nil {
		go func() {
			defer close(reloading)
			k.rl.run(rctx)
		}()
	} else {
		close(reloading)
	}

	select {
	case <-ctx.Done():
	case <-app.Wait():
	}
	stopReloads()
	<-reloading
	stopCtx, cancelStop := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancelStop()
	return app.Stop(stopCtx)
}

// options are the fx options of the service, short of its transport.
func (k *kit) options() []fx.Option {
	cfg := k.cfg
	opts := server.Options{
		Name:         k.cmd.Name,
		Version:      k.cmd.Version,
		Title:        k.cmd.Title,
		Logger:       k.logger,
		Authorizer:   k.acc.authorizer,
		Toolsets:     k.acc.toolsets,
		Instructions: k.cmd.Instructions,
		// In-flight calls get this long after the listener closes.
		ShutdownTimeout: cfg.ShutdownTimeout,
		Observers:       k.obs.observers(),
		ListTTL:         max(cfg.ListTTL, 0),
		// Listeners are told when a reload changes what they see.
		ListChanged: k.rl != nil,
	}
	if k.acc.policy != nil {
		// First: a request decides under the policy it began with, from
		// its first decision to its last upstream request.
		opts.Observers = append([]mcp.Middleware{k.acc.policy.Middleware()}, opts.Observers...)
	}
	if cfg.Stdio {
		opts.Caller = &authz.Caller{Subject: "local", Roles: []string{cfg.Caller}}
	}
	if cfg.RateLimit > 0 {
		opts.Middleware = append(opts.Middleware, ratelimit.Middleware(k.sh.limiter(cfg.RateLimit), ratelimit.Options{Logger: k.logger}))
	}
	// After the rate limit: a call over it is refused, cached or not. A
	// tool without Cache passes at the cost of a context lookup.
	opts.Middleware = append(opts.Middleware, k.results.Middleware())
	options := []fx.Option{
		fx.WithLogger(func() fxevent.Logger {
			// fx's events only at debug level, its errors too: each one
			// comes back from app.Err, Start or Stop, and Main prints it
			// once (fx alone would log a failed start three times).
			l := &fxevent.SlogLogger{Logger: k.logger}
			l.UseLogLevel(slog.LevelDebug)
			l.UseErrorLevel(slog.LevelDebug)
			return l
		}),
		// Room for the drain and the in-flight calls, and a margin.
		fx.StopTimeout(cfg.DrainDelay + cfg.ShutdownTimeout + 5*time.Second),
		fx.Supply(opts, cfg, k.logger),
		fx.Provide(
			k.buildUpstreams,
			func() *permission.Checker { return k.sh.confirmer(cfg.stateKey) },
			fx.Annotate(k.newTasks, fx.ResultTags(`group:"toolroute.installers"`)),
		),
		server.Module,
		fx.Options(k.cmd.Options...),
		k.acc.oauth.lifecycle(),
	}
	for _, key := range slices.Sorted(maps.Keys(k.upstreams)) {
		options = append(options, server.ProvideService(upstreamService(key)))
	}
	if k.sh != nil {
		options = append(options, server.ProvideService(k.sh.service))
	}
	return append(options, k.obs.fxOptions()...)
}

// newTasks is the MCP Tasks extension (server/tasks), as an installer
// of the server: its tasks in Redis with -redis, their changes in the
// telemetry and audit trail when on. On stop, after the transport's
// drain, running tasks get -shutdown-timeout to finish; then they fail.
// A service without task-capable tools advertises nothing and gets no
// task.
func (k *kit) newTasks(lc fx.Lifecycle) (server.Installer, error) {
	tk, err := tasks.New(tasks.Options{
		Authorizer: k.acc.authorizer,
		Store:      k.sh.taskStore(),
		Logger:     k.logger,
		OnChange:   k.obs.taskChanges(),
	})
	if err != nil {
		return nil, err
	}
	lc.Append(fx.Hook{OnStop: func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, k.cfg.ShutdownTimeout)
		defer cancel()
		if err := tk.Shutdown(ctx); err != nil {
			k.logger.Warn(k.cmd.Name+": tasks still running at the shutdown timeout were failed", slog.Any("error", err))
		}
		return nil
	}})
	return tk, nil
}

// httpOptions are the HTTP transport's options: the verifier, readiness
// (/readyz answers 503 while the RBAC proxy or the authorization server
// is unreachable), the drain, OAuth's metadata, -anonymous and
// -sdk-transport.
func (k *kit) httpOptions() server.HTTPServerOptions {
	hopts := server.HTTPServerOptions{
		Endpoint: server.HTTPOptions{
			Verifier: k.acc.verifier, Cancellations: k.sh.cancellations(),
			SDKTransport: k.cfg.SDKTransport,
		},
		DrainDelay: k.cfg.DrainDelay,
		ReadyCheck: k.acc.ready,
	}
	if k.acc.oauth != nil {
		k.acc.oauth.httpOptions(&hopts, k.cmd.Title)
		if sc := k.acc.scopes; sc != nil {
			hopts.ResourceMetadata.ScopesSupported = sc.Supported()
			if k.cfg.OAuth.StepUp {
				hopts.Endpoint.StepUp = sc.StepUp(k.acc.authorizer, calls(k.table))
			}
		}
	}
	if k.cfg.Anonymous != "" {
		hopts.Endpoint.Anonymous = &authz.Caller{Subject: "anonymous", Roles: []string{k.cfg.Anonymous}}
	}
	return hopts
}

// calls are the tools of table as authz describes them.
func calls(table registry.RouteTable) []*tool.Call {
	cs := make([]*tool.Call, len(table.Tools))
	for i, e := range table.Tools {
		cs[i] = &tool.Call{Tool: e.Name, ServiceKey: e.ServiceKey, Routes: e.Routes, Local: e.Local}
	}
	return cs
}

// startError words a start-up failure for the operator: an address in
// use names the flag to change rather than the listener's layers.
func (k *kit) startError(err error) error {
	if !k.cfg.Stdio && errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("-addr %s: the address is already in use (another process listens there): stop it or choose another address with -addr", k.cfg.Addr)
	}
	return err
}

// announce tells the operator, on standard error, where the service is
// and who may use it.
func (k *kit) announce(w io.Writer, hs *server.HTTPServer) {
	var b strings.Builder
	name, cfg, acc := k.cmd.Name, k.cfg, k.acc
	for _, key := range k.up.Keys() {
		if k.up.byKey[key].embedded {
			fmt.Fprintf(&b, "%s: upstream %s: embedded, in process, at %s\n", name, key, k.up.URL(key))
		} else {
			fmt.Fprintf(&b, "%s: upstream %s at %s\n", name, key, k.up.URL(key))
		}
	}
	switch {
	case cfg.ProxyAuth != "":
		fmt.Fprintf(&b, "%s: authorization by the RBAC proxy at %s\n", name, cfg.ProxyAuth)
	case cfg.PolicyFile != "":
		fmt.Fprintf(&b, "%s: authorization by the role policy %s (roles: %s)\n", name, cfg.PolicyFile, strings.Join(acc.files.roles, ", "))
	default:
		fmt.Fprintf(&b, "%s: authorization by the embedded role policy (roles: %s)\n", name, strings.Join(acc.files.roles, ", "))
	}
	if k.rl != nil {
		k.rl.describe(&b, k.status)
	}
	if cfg.Redis != "" {
		fmt.Fprintf(&b, "%s: sharing the replay guard, remembered answers, the rate limit and cancellations through Redis at %s (state key from %s)\n", name, redactedURL(cfg.Redis), cfg.StateKeyFile)
	}
	if cfg.RateLimit > 0 {
		where := "per process"
		if cfg.Redis != "" {
			where = "across replicas, per process while Redis is down"
		}
		fmt.Fprintf(&b, "%s: at most %d tool calls per second per caller (%s)\n", name, cfg.RateLimit, where)
	}
	if cfg.Stdio {
		fmt.Fprintf(&b, "%s: serving MCP over stdio as subject \"local\", role %s\n", name, cfg.Caller)
		io.WriteString(w, b.String())
		return
	}
	if acc.oauth != nil {
		acc.oauth.describe(&b, name)
	}
	if acc.scopes != nil {
		how := "tools whose scopes a token lacks are hidden"
		if cfg.OAuth.StepUp {
			how = "a call of a visible tool whose scopes the token lacks gets HTTP 403 naming them (step-up)"
		}
		fmt.Fprintf(&b, "%s: OAuth: routes need the scopes of -scope-policy %s (%s); %s\n", name, cfg.OAuth.ScopePolicyFile, strings.Join(acc.scopes.Supported(), " "), how)
	}
	fmt.Fprintf(&b, "%s: serving MCP at %s\n", name, hs.URL())
	if cfg.SDKTransport {
		fmt.Fprintf(&b, "%s: stateless HTTP through go-sdk's own handler (-sdk-transport)\n", name)
	}
	if acc.files.demo {
		fmt.Fprintf(&b, "%s: LOCAL-DEMO credentials (embedded; replace them with -tokens FILE):\n", name)
		for _, t := range acc.files.tokens {
			fmt.Fprintf(&b, "    Authorization: Bearer %-12s  subject %s, roles %s\n", t.Token, t.Subject, strings.Join(t.Roles, ", "))
		}
	}
	if cfg.Anonymous != "" {
		fmt.Fprintf(&b, "%s: WARNING: -anonymous is ON: every HTTP request WITHOUT a token acts as role %q.\n", name, cfg.Anonymous)
		fmt.Fprintf(&b, "%s: WARNING: anyone who can reach this address gets that role's tools. Use it only for local tools.\n", name)
	}
	io.WriteString(w, b.String())
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
