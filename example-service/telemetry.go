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
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/server/telemetry/otelsetup"
)

// telemetryConfig is the observability part of the command line, and,
// once serve has built it, the service's telemetry (nil when off).
type telemetryConfig struct {
	metricsAddr string // "" = no Prometheus endpoint
	auditFile   string // "" = no audit trail; "-" = standard error

	tel *telemetry.Telemetry // set by serve; nil: telemetry off
}

// register adds the observability flags to fs.
func (c *telemetryConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&c.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics, on a listener of their own (off by default)")
	fs.StringVar(&c.auditFile, "audit", "", "append audit records (JSON lines) to `FILE` (\"-\": standard error)")
}

// check validates the flags.
func (c *telemetryConfig) check() error {
	if c.metricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.metricsAddr); err != nil {
			return fmt.Errorf("-metrics-addr %q: %v", c.metricsAddr, err)
		}
	}
	return nil
}

// authorizer decorates a, whose decisions come from source, when
// telemetry is on.
func (c *telemetryConfig) authorizer(a authz.Authorizer, source string) authz.Authorizer {
	if c.tel == nil {
		return a
	}
	return c.tel.Authorizer(a, source)
}

// proxyClient is the HTTP client of the RBAC proxy's auth API: nil (the
// default client) when telemetry is off.
func (c *telemetryConfig) proxyClient() *http.Client {
	if c.tel == nil {
		return nil
	}
	return &http.Client{Transport: c.tel.ProxyTransport(nil)}
}

// observability is the service's telemetry while it serves.
type observability struct {
	cfg       *telemetryConfig
	providers *otelsetup.Providers
	audit     io.Closer // the audit file; nil for none or standard error
	metrics   *http.Server
	metricsLn net.Listener
}

// newObservability builds the telemetry cfg and the OTEL_* environment
// ask for, and sets cfg.tel; with neither, it returns nil and telemetry
// stays off (nothing installed, nothing slowed).
func newObservability(ctx context.Context, cfg *telemetryConfig, stderr io.Writer, logger *slog.Logger) (*observability, error) {
	providers, err := otelsetup.New(ctx, otelsetup.Options{ServiceName: "example-service", Prometheus: cfg.metricsAddr != ""})
	if err != nil {
		return nil, err
	}
	if !providers.Tracing && !providers.Metrics && cfg.auditFile == "" {
		return nil, nil
	}
	o := &observability{cfg: cfg, providers: providers}
	topts := telemetry.Options{TracerProvider: providers.TracerProvider, MeterProvider: providers.MeterProvider}
	switch cfg.auditFile {
	case "":
	case "-":
		topts.Audit = telemetry.NewJSONAudit(stderr, o.auditFailed(logger))
	default:
		f, err := os.OpenFile(cfg.auditFile, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			providers.Shutdown(ctx)
			return nil, fmt.Errorf("-audit: %w", err)
		}
		o.audit = f
		topts.Audit = telemetry.NewJSONAudit(f, o.auditFailed(logger))
	}
	if cfg.tel, err = telemetry.New(topts); err != nil {
		o.close(ctx)
		return nil, err
	}
	if cfg.metricsAddr != "" {
		if o.metricsLn, err = net.Listen("tcp", cfg.metricsAddr); err != nil {
			o.close(ctx)
			return nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", providers.Handler)
		o.metrics = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() {
			if err := o.metrics.Serve(o.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("example-service: metrics endpoint stopped", slog.Any("error", err))
			}
		}()
	}
	return o, nil
}

func (o *observability) auditFailed(logger *slog.Logger) func(error) {
	return func(err error) {
		logger.Error("example-service: writing the audit trail failed", slog.Any("error", err))
	}
}

// observers are the server's observers (server.Options.Observers).
func (o *observability) observers() []mcp.Middleware {
	if o == nil {
		return nil
	}
	return []mcp.Middleware{o.cfg.tel.Middleware()}
}

// instrument decorates the tools' upstream client.
func (o *observability) instrument(d *tools.Deps) *tools.Deps {
	if o != nil {
		d.Catalog.HTTPClient.Transport = o.cfg.tel.Transport(d.Catalog.HTTPClient.Transport, catalog.ServiceKey)
	}
	return d
}

// fxOptions count the server's elicitation questions.
func (o *observability) fxOptions() []fx.Option {
	if o == nil {
		return nil
	}
	return []fx.Option{fx.Invoke(func(s *mcp.Server) { s.AddSendingMiddleware(o.cfg.tel.SendingMiddleware()) })}
}

// announce tells the operator what is observed, and where.
func (o *observability) announce(w io.Writer) {
	if o == nil {
		return
	}
	if o.metricsLn != nil {
		fmt.Fprintf(w, "example-service: Prometheus metrics at http://%s/metrics\n", o.metricsLn.Addr())
	}
	if o.providers.Tracing {
		fmt.Fprintln(w, "example-service: traces exported as the OTEL_* environment says")
	}
	if o.cfg.auditFile != "" {
		fmt.Fprintf(w, "example-service: audit records (JSON lines) to %s\n", map[bool]string{true: "standard error", false: o.cfg.auditFile}[o.cfg.auditFile == "-"])
	}
}

// close stops the metrics endpoint, flushes the exporters and closes the
// audit file.
func (o *observability) close(ctx context.Context) error {
	if o == nil {
		return nil
	}
	var errs []error
	if o.metrics != nil {
		errs = append(errs, o.metrics.Shutdown(ctx))
	} else if o.metricsLn != nil {
		errs = append(errs, o.metricsLn.Close())
	}
	errs = append(errs, o.providers.Shutdown(ctx))
	if o.audit != nil {
		errs = append(errs, o.audit.Close())
	}
	return errors.Join(errs...)
}
