package telemetry

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
)

// Module adds telemetry to an application built with server.Module. It
// provides the *Telemetry, made from the application's
// trace.TracerProvider, metric.MeterProvider,
// propagation.TextMapPropagator and [Auditor] where the graph has them
// (each optional: the global providers, W3C propagation and no audit
// otherwise), and decorates the application's server.Options: its
// [Telemetry.Middleware] joins Options.Observers, and Options.Authorizer
// is decorated ([Telemetry.Authorizer]) unless it is decorated already,
// with the source its type tells (an *authz.Policy is "policy", an
// *authz.ProxyAuth "proxy", any other "other": decorate a cache yourself
// to see its hits). The server's elicitation questions are counted too
// ([Telemetry.SendingMiddleware]).
//
// Upstream clients are the application's own: decorate their transports
// with [Telemetry.Transport].
//
// Module is an fx.Options, not an fx.Module, so that its decoration of
// server.Options reaches server.Module.
var Module = fx.Options(
	fx.Provide(newFromGraph),
	fx.Decorate(decorateOptions),
	fx.Invoke(func(s *mcp.Server, t *Telemetry) { s.AddSendingMiddleware(t.SendingMiddleware()) }),
)

type graphParams struct {
	fx.In
	TracerProvider trace.TracerProvider          `optional:"true"`
	MeterProvider  metric.MeterProvider          `optional:"true"`
	Propagator     propagation.TextMapPropagator `optional:"true"`
	Audit          Auditor                       `optional:"true"`
}

func newFromGraph(p graphParams) (*Telemetry, error) {
	return New(Options{TracerProvider: p.TracerProvider, MeterProvider: p.MeterProvider, Propagator: p.Propagator, Audit: p.Audit})
}

func decorateOptions(o server.Options, t *Telemetry) server.Options {
	o.Observers = append(slices.Clip(o.Observers), t.Middleware())
	if o.Authorizer != nil {
		if _, done := o.Authorizer.(*authorizer); !done {
			o.Authorizer = t.Authorizer(o.Authorizer, SourceOf(o.Authorizer))
		}
	}
	return o
}

// SourceOf names the source of a's decisions by its type: [SourcePolicy]
// for an *authz.Policy, [SourceProxy] for an *authz.ProxyAuth,
// [SourceOther] for any other.
func SourceOf(a authz.Authorizer) string {
	switch a.(type) {
	case *authz.Policy:
		return SourcePolicy
	case *authz.ProxyAuth:
		return SourceProxy
	}
	return SourceOther
}
