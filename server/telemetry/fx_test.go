package telemetry_test

import (
	"context"
	"maps"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"
	"go.uber.org/fx/fxtest"

	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

// TestModule: under fx, telemetry.Module takes the application's
// providers and auditor, installs its middleware as an observer and
// decorates the authorizer.
func TestModule(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	reader := sdkmetric.NewManualReader()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	var trail syncbuf.Buffer
	var s *mcp.Server
	app := fxtest.New(t,
		fx.Supply(server.Options{Authorizer: testPolicy(t)}),
		fx.Supply(&deps{client: http.DefaultClient}),
		fx.Provide(
			func() trace.TracerProvider { return tp },
			func() metric.MeterProvider { return mp },
			func() telemetry.Auditor { return telemetry.NewJSONAudit(&trail, nil) },
		),
		server.ProvideService(func() server.Service { return server.Service{Key: "items"} }),
		server.Module,
		server.Tools(testRegistry()),
		telemetry.Module,
		fx.Populate(&s),
	)
	app.RequireStart()
	defer app.RequireStop()
	cs := servertest.Connect(t, s, &viewer, servertest.Options{})
	// Refused: the span and the decision show that the observer runs
	// before authorization, and that the authorizer is decorated.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": itemID}}); err == nil {
		t.Fatal("delete_item: no error")
	}
	if evs := decisions(spanNamed(t, spans.Ended(), "tools/call delete_item")); len(evs) != 1 || evs[0]["toolroute.authz.outcome"] != "deny" {
		t.Errorf("the refused call's authorization events: %v", evs)
	}
	var rm = collect(t, reader)
	if got, want := points(rm[telemetry.MetricAuthzDecisions]), map[string]int64{"toolroute.authz.outcome=deny,toolroute.authz.source=policy": 1}; !maps.Equal(got, want) {
		t.Errorf("decisions %v, want %v", got, want)
	}
	if trail.String() == "" {
		t.Error("no audit record")
	}
}
