// Package otelsetup builds OpenTelemetry SDK providers the standard way,
// for services that have none of their own: traces and metrics exported
// as the OTEL_* environment variables say (OTLP over HTTP or gRPC,
// console, …, through go.opentelemetry.io/contrib/exporters/autoexport),
// and metrics served for a Prometheus scrape. It is apart from
// server/telemetry so that a service that brings its own providers links
// no exporter.
//
// Nothing is exported, and nothing is slowed, unless asked for: with no
// OTEL_* exporter configured and no Prometheus handler wanted, the
// providers are OpenTelemetry's no-op ones.
//
// # Environment
//
// Traces are exported when OTEL_TRACES_EXPORTER names an exporter
// ("otlp", "console"; "none" turns them off), or when
// OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set
// (then over OTLP, its protocol from OTEL_EXPORTER_OTLP_PROTOCOL,
// "http/protobuf" by default). Metrics likewise, with OTEL_METRICS_EXPORTER
// and OTEL_EXPORTER_OTLP_METRICS_ENDPOINT. OTEL_SDK_DISABLED=true turns
// everything exported by the environment off. The resource comes from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES, the sampler from
// OTEL_TRACES_SAMPLER, the batching from OTEL_BSP_* — all read by the SDK.
package otelsetup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/contrib/exporters/autoexport"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
	tracenoop "go.opentelemetry.io/otel/trace/noop"
)

// Options configures [New].
type Options struct {
	// ServiceName is the service.name resource attribute unless
	// OTEL_SERVICE_NAME sets it. "" selects "toolroute".
	ServiceName string
	// Prometheus asks for a Prometheus scrape handler ([Providers.Handler])
	// serving the metrics in the text exposition format.
	Prometheus bool
	// Getenv reads the environment. nil selects os.Getenv. (Tests set it;
	// the SDK's own settings, such as the OTLP endpoint, are read from the
	// process environment regardless.)
	Getenv func(string) string
}

// Providers are the tracer and meter providers [New] built, and what
// serves and stops them.
type Providers struct {
	// TracerProvider is an SDK provider exporting as configured, or the
	// no-op provider when no trace exporter is configured.
	TracerProvider trace.TracerProvider
	// MeterProvider is an SDK provider, or the no-op provider when neither
	// a metric exporter nor Prometheus is configured.
	MeterProvider metric.MeterProvider
	// Handler serves the metrics for a Prometheus scrape (mount it at
	// /metrics); nil without Options.Prometheus.
	Handler http.Handler
	// Tracing and Metrics tell whether anything is exported.
	Tracing, Metrics bool

	shutdown []func(context.Context) error
}

// New builds the providers of opts and the environment. Call Shutdown at
// exit, to flush what is buffered.
func New(ctx context.Context, opts Options) (*Providers, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	p := &Providers{TracerProvider: tracenoop.NewTracerProvider(), MeterProvider: metricnoop.NewMeterProvider()}
	disabled := strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true")
	traces := !disabled && configured(getenv, "OTEL_TRACES_EXPORTER", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	metrics := !disabled && configured(getenv, "OTEL_METRICS_EXPORTER", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT")
	if !traces && !metrics && !opts.Prometheus {
		return p, nil
	}
	name := opts.ServiceName
	if name == "" {
		name = "toolroute"
	}
	// The environment's attributes (OTEL_SERVICE_NAME among them) win.
	res, err := resource.Merge(
		resource.NewSchemaless(semconv.ServiceName(name)),
		resource.Environment(),
	)
	if err != nil {
		return nil, fmt.Errorf("otelsetup: resource: %w", err)
	}
	if traces {
		exp, err := autoexport.NewSpanExporter(ctx)
		if err != nil {
			return nil, fmt.Errorf("otelsetup: trace exporter (OTEL_TRACES_EXPORTER, OTEL_EXPORTER_OTLP_*): %w", err)
		}
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
		p.TracerProvider, p.Tracing = tp, true
		p.shutdown = append(p.shutdown, tp.Shutdown)
	}
	var readers []sdkmetric.Option
	if metrics {
		r, err := autoexport.NewMetricReader(ctx)
		if err != nil {
			p.Shutdown(ctx)
			return nil, fmt.Errorf("otelsetup: metric exporter (OTEL_METRICS_EXPORTER, OTEL_EXPORTER_OTLP_*): %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(r))
	}
	if opts.Prometheus {
		reg := prometheus.NewRegistry()
		exp, err := otelprom.New(otelprom.WithRegisterer(reg))
		if err != nil {
			p.Shutdown(ctx)
			return nil, fmt.Errorf("otelsetup: prometheus exporter: %w", err)
		}
		readers = append(readers, sdkmetric.WithReader(exp))
		p.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	}
	mp := sdkmetric.NewMeterProvider(append(readers, sdkmetric.WithResource(res))...)
	p.MeterProvider, p.Metrics = mp, true
	p.shutdown = append(p.shutdown, mp.Shutdown)
	return p, nil
}

// configured reports whether the environment asks for an exporter of a
// signal: its OTEL_*_EXPORTER names one other than "none", or, that being
// unset, an OTLP endpoint is set.
func configured(getenv func(string) string, exporterVar, signalEndpointVar string) bool {
	if v := strings.TrimSpace(getenv(exporterVar)); v != "" {
		return v != "none"
	}
	return getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv(signalEndpointVar) != ""
}

// Shutdown flushes and stops the providers.
func (p *Providers) Shutdown(ctx context.Context) error {
	var errs []error
	for _, f := range p.shutdown {
		errs = append(errs, f(ctx))
	}
	p.shutdown = nil
	return errors.Join(errs...)
}
