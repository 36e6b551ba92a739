package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server/tasks"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/server/telemetry/otelsetup"
)

// observability is the service's telemetry while it serves; a nil
// *observability is telemetry off (nothing installed, nothing slowed).
type observability struct {
	name      string
	cfg       Config
	tel       *telemetry.Telemetry
	providers *otelsetup.Providers
	audit     io.Closer // the audit file; nil for none or standard error
	metrics   *http.Server
	metricsLn net.Listener
	mux       *http.ServeMux // the metrics listener's, or nil
}

// authorizer decorates a, whose decisions come from source, when
// telemetry is on.
func (o *observability) authorizer(a authz.Authorizer, source string) authz.Authorizer {
	if o == nil {
		return a
	}
	return o.tel.Authorizer(a, source)
}

// operatorHandle serves h at pattern on the metrics listener, the
// operator's (-metrics-addr), and returns its URL there; "" without one.
func (o *observability) operatorHandle(path string, h http.Handler) string {
	if o == nil || o.mux == nil {
		return ""
	}
	o.mux.Handle("GET "+path, h)
	return "http://" + o.metricsLn.Addr().String() + path
}

// meter is the service's meter: no-op when telemetry is off.
func (o *observability) meter() metric.Meter {
	if o == nil {
		return noop.NewMeterProvider().Meter(serviceMeter)
	}
	return o.providers.MeterProvider.Meter(serviceMeter)
}

// serviceMeter names the kit's own instruments' meter.
const serviceMeter = "github.com/toolroute/toolroute/service"

// taskChanges reports the changes of tasks when telemetry is on; nil
// when it is off.
func (o *observability) taskChanges() func(context.Context, tasks.Change) {
	if o == nil {
		return nil
	}
	return o.tel.TaskChange
}

// proxyClient is the HTTP client of the RBAC proxy's auth API: nil (the
// default client) when telemetry is off.
func (o *observability) proxyClient() *http.Client {
	if o == nil {
		return nil
	}
	return &http.Client{Transport: o.tel.ProxyTransport(nil)}
}

// newObservability builds the telemetry cfg (-metrics-addr, -audit) and
// the OTEL_* environment ask for; with neither, it returns nil.
func newObservability(ctx context.Context, name string, cfg Config, stderr io.Writer, logger *slog.Logger) (*observability, error) {
	providers, err := otelsetup.New(ctx, otelsetup.Options{ServiceName: name, Prometheus: cfg.MetricsAddr != ""})
	if err != nil {
		return nil, err
	}
	if !providers.Tracing && !providers.Metrics && cfg.Audit == "" {
		return nil, nil
	}
	o := &observability{name: name, cfg: cfg, providers: providers}
	topts := telemetry.Options{TracerProvider: providers.TracerProvider, MeterProvider: providers.MeterProvider}
	switch cfg.Audit {
	case "":
	case "-":
		topts.Audit = telemetry.NewJSONAudit(stderr, o.auditFailed(name, logger))
	default:
		f, err := os.OpenFile(cfg.Audit, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			providers.Shutdown(ctx)
			return nil, fmt.Errorf("-audit: %w", err)
		}
		o.audit = f
		topts.Audit = telemetry.NewJSONAudit(f, o.auditFailed(name, logger))
	}
	if o.tel, err = telemetry.New(topts); err != nil {
		o.close(ctx)
		return nil, err
	}
	if cfg.MetricsAddr != "" {
		if o.metricsLn, err = net.Listen("tcp", cfg.MetricsAddr); err != nil {
			o.close(ctx)
			return nil, fmt.Errorf("-metrics-addr: %w", err)
		}
		o.mux = http.NewServeMux()
		o.mux.Handle("GET /metrics", providers.Handler)
		o.metrics = &http.Server{Handler: o.mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
		go func() {
			if err := o.metrics.Serve(o.metricsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error(name+": metrics endpoint stopped", slog.Any("error", err))
			}
		}()
	}
	return o, nil
}

func (o *observability) auditFailed(name string, logger *slog.Logger) func(error) {
	return func(err error) {
		logger.Error(name+": writing the audit trail failed", slog.Any("error", err))
	}
}

// meterProvider makes the instruments of the kit's own parts (the result
// cache's): a no-op one when telemetry is off.
func (o *observability) meterProvider() metric.MeterProvider {
	if o == nil {
		return noop.NewMeterProvider()
	}
	return o.providers.MeterProvider
}

// observers are the server's observers (server.Options.Observers):
// telemetry's middleware, none when it is off.
func (o *observability) observers() []mcp.Middleware {
	if o == nil {
		return nil
	}
	return []mcp.Middleware{o.tel.Middleware()}
}

// fxOptions count the server's elicitation questions.
func (o *observability) fxOptions() []fx.Option {
	if o == nil {
		return nil
	}
	return []fx.Option{fx.Invoke(func(s *mcp.Server) { s.AddSendingMiddleware(o.tel.SendingMiddleware()) })}
}

// announce tells the operator what is observed, and where.
func (o *observability) announce(w io.Writer) {
	if o == nil {
		return
	}
	name := o.name
	if o.metricsLn != nil {
		fmt.Fprintf(w, "%s: Prometheus metrics at http://%s/metrics\n", name, o.metricsLn.Addr())
	}
	if o.providers.Tracing {
		fmt.Fprintf(w, "%s: traces exported as the OTEL_* environment says\n", name)
	}
	if o.cfg.Audit != "" {
		fmt.Fprintf(w, "%s: audit records (JSON lines) to %s\n", name, map[bool]string{true: "standard error", false: o.cfg.Audit}[o.cfg.Audit == "-"])
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
