package otelsetup_test

import (
	"context"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	metricnoop "go.opentelemetry.io/otel/metric/noop"
	tracenoop "go.opentelemetry.io/otel/trace/noop"

	"github.com/toolroute/toolroute/server/telemetry/otelsetup"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

// TestNothingConfigured: without an exporter or Prometheus, the
// providers are the no-op ones.
func TestNothingConfigured(t *testing.T) {
	for _, e := range []map[string]string{
		{},
		{"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1"},
		{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"},
	} {
		p, err := otelsetup.New(context.Background(), otelsetup.Options{Getenv: env(e)})
		if err != nil {
			t.Fatal(err)
		}
		_, noTrace := p.TracerProvider.(tracenoop.TracerProvider)
		_, noMetric := p.MeterProvider.(metricnoop.MeterProvider)
		if !noTrace || !noMetric || p.Tracing || p.Metrics || p.Handler != nil {
			t.Errorf("%v: providers %T %T, tracing %v, metrics %v", e, p.TracerProvider, p.MeterProvider, p.Tracing, p.Metrics)
		}
	}
}

// TestConfigured: an OTLP endpoint turns traces on; Prometheus serves
// the recorded metrics.
func TestConfigured(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:1") // never reached: nothing is flushed
	p, err := otelsetup.New(context.Background(), otelsetup.Options{Prometheus: true,
		Getenv: env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_METRICS_EXPORTER": "none"})})
	if err != nil {
		t.Fatal(err)
	}
	if !p.Tracing || !p.Metrics || p.Handler == nil {
		t.Fatalf("tracing %v, metrics %v, handler %v", p.Tracing, p.Metrics, p.Handler)
	}
	c, _ := p.MeterProvider.Meter("t").Int64Counter("x.y")
	c.Add(context.Background(), 2)
	rec := httptest.NewRecorder()
	p.Handler.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	if !strings.Contains(string(body), "x_y_total") || !strings.Contains(string(body), `service_name="toolroute"`) {
		t.Errorf("scrape:\n%s", body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 0)
	defer cancel()
	p.Shutdown(ctx) // the OTLP exporter has nothing to send
}
