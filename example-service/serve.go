package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
	"time"

	"go.uber.org/fx"
	"go.uber.org/fx/fxevent"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/server"
)

// instructions tell clients what the server is for.
const instructions = `A catalog of items (id, name, quantity in stock).
Use ` + "`list_items`" + ` to find item ids and ` + "`get_item`" + ` to read one item.
You see only the tools your role allows; ` + "`whoami`" + ` tells your subject and roles.`

// catalogURL is the origin of the catalog API the tools call.
type catalogURL string

// serve runs the service described by cfg until ctx is done or, over
// stdio, the client leaves.
func serve(ctx context.Context, cfg config, stdin io.Reader, stdout, stderr io.Writer) error {
	// The tools log with it too (upstream failures): no record may carry
	// a bearer, whatever an upstream echoes.
	logger := slog.New(server.RedactingHandler(slog.NewTextHandler(stderr, nil)))
	obs, err := newObservability(ctx, &cfg.telemetry, stderr, logger)
	if err != nil {
		return err
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := obs.close(ctx); err != nil {
			logger.Warn("example-service: stopping telemetry", slog.Any("error", err))
		}
	}()
	acc, err := loadAccess(cfg)
	if err != nil {
		return err
	}
	sh, err := newShared(cfg, logger)
	if err != nil {
		return err
	}
	defer sh.close()
	opts := server.Options{
		Name:         "example-service",
		Title:        "Catalog (toolroute example)",
		Logger:       logger,
		Authorizer:   acc.authorizer,
		Instructions: instructions,
		// In-flight calls get this long after the listener closes.
		ShutdownTimeout: cfg.shutdownTimeout,
		Observers:       obs.observers(),
	}
	if cfg.stdio {
		opts.Caller = &authz.Caller{Subject: "local", Roles: []string{cfg.callerRole}}
	}
	if cfg.rateLimit > 0 {
		opts.Middleware = append(opts.Middleware, ratelimit.Middleware(sh.limiter(cfg.rateLimit), ratelimit.Options{Logger: logger}))
	}

	var (
		hs       *server.HTTPServer
		upstream catalogURL
	)
	options := []fx.Option{
		fx.WithLogger(func() fxevent.Logger {
			// fx's events only at debug level, its errors too: each one
			// comes back from app.Err, Start or Stop, and main prints it
			// once (fx alone would log a failed start three times).
			l := &fxevent.SlogLogger{Logger: logger}
			l.UseLogLevel(slog.LevelDebug)
			l.UseErrorLevel(slog.LevelDebug)
			return l
		}),
		// Room for the drain and the in-flight calls, and a margin.
		fx.StopTimeout(cfg.drainDelay + cfg.shutdownTimeout + 5*time.Second),
		fx.Supply(opts),
		fx.Provide(
			func(lc fx.Lifecycle) (catalogURL, error) {
				if cfg.upstream != "" {
					return catalogURL(cfg.upstream), nil
				}
				return embeddedCatalog(lc, logger, acc.oauth.guardCatalog)
			},
			func(u catalogURL) *tools.Deps { return obs.instrument(newDeps(cfg, u, acc, sh, logger)) },
		),
		server.ProvideService(catalogService),
		server.Module,
		server.Tools(tools.Registry),
		fx.Populate(&upstream),
		acc.oauth.lifecycle(),
	}
	if sh != nil {
		options = append(options, server.ProvideService(sh.service))
	}
	options = append(options, obs.fxOptions()...)
	if cfg.stdio {
		options = append(options, server.Stdio(io.NopCloser(stdin), nopWriteCloser{stdout}))
	} else {
		// /readyz answers 503 while the RBAC proxy is unreachable (the
		// log names it).
		hopts := server.HTTPServerOptions{
			Endpoint:   server.HTTPOptions{Verifier: acc.verifier, Cancellations: sh.cancellations()},
			DrainDelay: cfg.drainDelay,
			ReadyCheck: acc.ready,
		}
		if acc.oauth != nil {
			acc.oauth.httpOptions(&hopts)
		}
		if cfg.anonymous != "" {
			hopts.Endpoint.Anonymous = &authz.Caller{Subject: "anonymous", Roles: []string{cfg.anonymous}}
		}
		options = append(options, server.HTTP(cfg.addr, hopts), fx.Populate(&hs))
	}
	app := fx.New(options...)
	if err := app.Err(); err != nil {
		return err
	}
	startCtx, cancel := context.WithTimeout(ctx, app.StartTimeout())
	defer cancel()
	if err := app.Start(startCtx); err != nil {
		return startError(cfg, err)
	}
	announce(stderr, cfg, acc, hs, upstream)
	obs.announce(stderr)

	select {
	case <-ctx.Done():
	case <-app.Wait():
	}
	stopCtx, cancelStop := context.WithTimeout(context.Background(), app.StopTimeout())
	defer cancelStop()
	return app.Stop(stopCtx)
}

// startError words a start-up failure for the operator: an address in
// use names the flag to change rather than the listener's layers.
func startError(cfg config, err error) error {
	if !cfg.stdio && errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("-addr %s: the address is already in use (another process listens there): stop it or choose another address with -addr", cfg.addr)
	}
	return err
}

// announce tells the operator, on standard error, where the service is
// and who may use it.
func announce(w io.Writer, cfg config, acc *access, hs *server.HTTPServer, upstream catalogURL) {
	var b strings.Builder
	if cfg.upstream == "" {
		fmt.Fprintf(&b, "example-service: embedded catalog API (in memory, demo items) at %s\n", upstream)
	} else {
		fmt.Fprintf(&b, "example-service: catalog API at %s\n", upstream)
	}
	switch {
	case cfg.proxyAuth != "":
		fmt.Fprintf(&b, "example-service: authorization by the RBAC proxy at %s\n", cfg.proxyAuth)
	case cfg.policyFile != "":
		fmt.Fprintf(&b, "example-service: authorization by the role policy %s (roles: %s)\n", cfg.policyFile, strings.Join(acc.roles, ", "))
	default:
		fmt.Fprintf(&b, "example-service: authorization by the embedded role policy (roles: %s)\n", strings.Join(acc.roles, ", "))
	}
	if cfg.confirmDestructive {
		b.WriteString("example-service: delete_item asks for confirmation (-confirm-destructive)\n")
	}
	if cfg.redisURL != "" {
		fmt.Fprintf(&b, "example-service: sharing the replay guard, remembered answers, the rate limit and cancellations through Redis at %s (state key from %s)\n", redactedURL(cfg.redisURL), cfg.stateKeyFile)
	}
	if cfg.rateLimit > 0 {
		where := "per process"
		if cfg.redisURL != "" {
			where = "across replicas, per process while Redis is down"
		}
		fmt.Fprintf(&b, "example-service: at most %d tool calls per second per caller (%s)\n", cfg.rateLimit, where)
	}
	if cfg.stdio {
		fmt.Fprintf(&b, "example-service: serving MCP over stdio as subject \"local\", role %s\n", cfg.callerRole)
		io.WriteString(w, b.String())
		return
	}
	if acc.oauth != nil {
		acc.oauth.describe(&b)
	}
	fmt.Fprintf(&b, "example-service: serving MCP at %s\n", hs.URL())
	if acc.demo {
		b.WriteString("example-service: LOCAL-DEMO credentials (embedded; replace them with -tokens FILE):\n")
		for _, t := range acc.tokens {
			fmt.Fprintf(&b, "    Authorization: Bearer %-12s  subject %s, roles %s\n", t.Token, t.Subject, strings.Join(t.Roles, ", "))
		}
	}
	if cfg.anonymous != "" {
		fmt.Fprintf(&b, "example-service: WARNING: -anonymous is ON: every HTTP request WITHOUT a token acts as role %q.\n", cfg.anonymous)
		b.WriteString("example-service: WARNING: anyone who can reach this address gets that role's tools. Use it only for local tools.\n")
	}
	io.WriteString(w, b.String())
}

// embeddedCatalog runs the catalog API in-process, on a loopback port,
// from start to stop.
func embeddedCatalog(lc fx.Lifecycle, logger *slog.Logger, guard func(http.Handler) http.Handler) (catalogURL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("embedded catalog: %w", err)
	}
	srv := &http.Server{
		Handler:           guard(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...))),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					logger.Error("example-service: embedded catalog stopped", slog.Any("error", err))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return catalogURL("http://" + ln.Addr().String()), nil
}

// serveCatalog is the catalog subcommand: the demo catalog API alone, in
// memory, until ctx is done — the upstream that replicas of the service
// share in the deployment kit (deploy/).
func serveCatalog(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("example-service catalog", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8081", "HTTP listen `address`")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("catalog: %w", err)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	srv := &http.Server{
		Handler:           catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	fmt.Fprintf(stderr, "example-service: demo catalog API (in memory) at http://%s\n", ln.Addr())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(stopCtx)
}

// catalogService is the catalog's server.Service: warming it checks that
// the catalog accepts connections, so a wrong -upstream fails the start.
func catalogService(u catalogURL) (server.Service, error) {
	pu, err := url.Parse(string(u))
	if err != nil {
		return server.Service{}, err
	}
	port := pu.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
	}
	addr := net.JoinHostPort(pu.Hostname(), port)
	return server.Service{
		Key: catalog.ServiceKey,
		Warm: func(ctx context.Context) error {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return fmt.Errorf("the catalog at %s does not accept connections: %w", u, err)
			}
			return c.Close()
		},
	}, nil
}

// newDeps builds the tools' container: a catalog client whose transport
// is authz's upstream transport (it checks each request against the
// calling tool's routes and the caller, asking the server's authorizer
// and logging refusals to the server's logger, and forwards the caller's
// bearer, or in OAuth mode a token exchanged for it, or none).
func newDeps(cfg config, u catalogURL, acc *access, sh *shared, logger *slog.Logger) *tools.Deps {
	var base http.RoundTripper = catalog.NewTransport()
	if acc.oauth != nil {
		base = acc.oauth.upstream(base)
	}
	d := &tools.Deps{
		Catalog: &catalog.Client{
			BaseURL:    string(u),
			HTTPClient: &http.Client{Transport: authz.Transport(base, catalog.ServiceKey, string(u), acc.authorizer, authz.Options{Logger: logger})},
		},
		Logger: logger,
	}
	if cfg.confirmDestructive {
		d.Confirm = sh.confirmer(cfg.stateKey)
	}
	return d
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
