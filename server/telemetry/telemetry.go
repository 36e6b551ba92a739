package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope of every span and instrument
// this package makes.
const ScopeName = "github.com/toolroute/toolroute/server/telemetry"

// The names of toolroute's own instruments (the MCP ones are named by
// the semantic conventions: mcp.server.operation.duration and
// mcp.server.session.duration). The package documentation has the table
// of all of them with their attributes.
const (
	MetricAuthzDecisions   = "toolroute.authz.decisions"
	MetricAuthzCache       = "toolroute.authz.cache.lookups"
	MetricUpstreamDuration = "toolroute.upstream.request.duration"
	MetricCallsActive      = "toolroute.calls.active"
	MetricQuestions        = "toolroute.questions"
	MetricDeprecatedCalls  = "toolroute.calls.deprecated"
)

// The attribute keys of toolroute's own instruments and spans.
const (
	AttrAuthzOutcome    = attribute.Key("toolroute.authz.outcome")      // allow, deny, unauthenticated, outage
	AttrAuthzSource     = attribute.Key("toolroute.authz.source")       // policy, proxy, cache, other
	AttrAuthzRoutes     = attribute.Key("toolroute.authz.routes")       // routes asked about (decision events only)
	AttrCacheResult     = attribute.Key("toolroute.authz.cache.result") // hit, miss
	AttrService         = attribute.Key("toolroute.service")            // the upstream's service key
	AttrQuestionState   = attribute.Key("toolroute.question.state")     // asked, answered
	AttrQuestionChannel = attribute.Key("toolroute.question.channel")   // input_required, elicitation
)

// The sources of an authorization decision, for [Telemetry.Authorizer].
const (
	SourcePolicy = "policy" // an in-process authz.Policy
	SourceProxy  = "proxy"  // the RBAC proxy (authz.ProxyAuth)
	SourceCache  = "cache"  // a decision cache (authz.Cached): answered from the cache unless an inner source answered
	SourceOther  = "other"  // any other authorizer
)

// Options configures [New]. Every zero field selects the documented
// default.
type Options struct {
	// TracerProvider makes the spans. nil selects the global one
	// (otel.GetTracerProvider), which makes none until an SDK provider is
	// set.
	TracerProvider trace.TracerProvider
	// MeterProvider makes the instruments. nil selects the global one
	// (otel.GetMeterProvider).
	MeterProvider metric.MeterProvider
	// Propagator reads the trace context of a request (params._meta,
	// else the HTTP headers) and writes it into upstream requests. nil
	// selects W3C trace context and baggage.
	Propagator propagation.TextMapPropagator
	// Audit, if set, receives one [Record] per security-relevant event.
	Audit Auditor
	// AuditKey, if set, keys the digest of a call's arguments in audit
	// records (HMAC-SHA256 instead of SHA-256), so that a reader of the
	// audit trail cannot test guesses of low-entropy arguments.
	AuditKey []byte
}

// Telemetry holds the tracer, the instruments and the audit sink, and
// makes the decorators that feed them: [Telemetry.Middleware] (the MCP
// server span and metrics, and the audit records), [Telemetry.Authorizer]
// (decision events and metrics), [Telemetry.Transport] (upstream spans and
// metrics, trace context propagated), [Telemetry.ProxyTransport] (spans of
// the RBAC proxy's HTTP calls) and [Telemetry.SendingMiddleware]
// (elicitation questions). It must be created with [New]; it is safe for
// concurrent use.
type Telemetry struct {
	tracer   trace.Tracer
	tp       trace.TracerProvider
	mp       metric.MeterProvider
	prop     propagation.TextMapPropagator
	audit    Auditor
	auditKey []byte

	opDuration       mcpconv.ServerOperationDuration
	sessionDuration  mcpconv.ServerSessionDuration
	upstreamDuration metric.Float64Histogram
	questions        metric.Int64Counter
	tasks            metric.Int64Counter

	// The counters every request counts in are counted in memory and
	// reported when the meter provider collects (observe).
	decisions       metric.Int64ObservableCounter
	cacheLookups    metric.Int64ObservableCounter
	active          metric.Int64ObservableUpDownCounter
	deprecatedCalls metric.Int64ObservableCounter
	decisionSums    sums[[2]string] // outcome, source
	cacheSums       sums[string]    // hit, miss
	deprecatedSums  sums[string]    // gen_ai.tool.name
	activeCalls     atomic.Int64

	opOpts    memo[opKey, *measurement]
	upOpts    memo[upKey, *measurement]
	upSpans   memo[upSpanKey, *upstreamSpan]
	toolSpans memo[string, string] // tool name → its server spans' name
	events    memo[eventKey, []trace.EventOption]
}

// New returns a Telemetry reporting to opts' providers. It fails only if
// the meter provider refuses an instrument.
func New(opts Options) (*Telemetry, error) {
	t := &Telemetry{tp: opts.TracerProvider, mp: opts.MeterProvider, prop: opts.Propagator, audit: opts.Audit, auditKey: opts.AuditKey}
	if t.tp == nil {
		t.tp = otel.GetTracerProvider()
	}
	if t.mp == nil {
		t.mp = otel.GetMeterProvider()
	}
	if t.prop == nil {
		t.prop = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
	}
	t.tracer = t.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	m := t.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	var errs []error
	var err error
	t.opDuration, err = mcpconv.NewServerOperationDuration(m, metric.WithExplicitBucketBoundaries(durationBuckets...))
	errs = append(errs, err)
	t.sessionDuration, err = mcpconv.NewServerSessionDuration(m, metric.WithExplicitBucketBoundaries(sessionBuckets...))
	errs = append(errs, err)
	t.decisions, err = m.Int64ObservableCounter(MetricAuthzDecisions, metric.WithUnit("{decision}"),
		metric.WithDescription("Authorization decisions, one per route decided, by outcome and by the source that decided."))
	errs = append(errs, err)
	t.cacheLookups, err = m.Int64ObservableCounter(MetricAuthzCache, metric.WithUnit("{lookup}"),
		metric.WithDescription("Lookups in the authorization decision cache, one per route, by result (hit or miss)."))
	errs = append(errs, err)
	t.upstreamDuration, err = m.Float64Histogram(MetricUpstreamDuration, metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(durationBuckets...),
		metric.WithDescription("Upstream requests the tools send, by route template, method and status, from the request until its response headers (or its refusal)."))
	errs = append(errs, err)
	t.active, err = m.Int64ObservableUpDownCounter(MetricCallsActive, metric.WithUnit("{call}"),
		metric.WithDescription("tools/call requests in flight."))
	errs = append(errs, err)
	t.questions, err = m.Int64Counter(MetricQuestions, metric.WithUnit("{question}"),
		metric.WithDescription("Questions to the user (permission questions among them): asked, and answered, by channel."))
	errs = append(errs, err)
	t.tasks, err = m.Int64Counter(MetricTasks, metric.WithUnit("{change}"),
		metric.WithDescription("Stored status changes of tasks (server/tasks), by tool and status."))
	errs = append(errs, err)
	t.deprecatedCalls, err = m.Int64ObservableCounter(MetricDeprecatedCalls, metric.WithUnit("{call}"),
		metric.WithDescription("tools/call requests of deprecated tools, by tool (served by server.New, which knows the tools)."))
	errs = append(errs, err)
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("telemetry: creating the instruments: %w", err)
	}
	if _, err := m.RegisterCallback(t.observe, t.decisions, t.cacheLookups, t.active, t.deprecatedCalls); err != nil {
		return nil, fmt.Errorf("telemetry: registering the counters' callback: %w", err)
	}
	return t, nil
}

// observe reports the counters counted in memory.
func (t *Telemetry) observe(_ context.Context, o metric.Observer) error {
	t.decisionSums.observe(o, t.decisions)
	t.cacheSums.observe(o, t.cacheLookups)
	t.deprecatedSums.observe(o, t.deprecatedCalls)
	o.ObserveInt64(t.active, t.activeCalls.Load())
	return nil
}

// durationBuckets are the semantic conventions' advice for
// mcp.server.operation.duration, used for upstream requests too.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// sessionBuckets span sessions from seconds to a day.
var sessionBuckets = []float64{1, 10, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400}

// ProxyTransport returns base (nil: http.DefaultTransport) instrumented
// with otelhttp, for the HTTP client of an RBAC proxy's auth API
// (authz.ProxyAuth.Client): each request to the proxy becomes a client
// span under the span that asked for the decision, with the trace
// context propagated. The
// proxy's URLs carry no argument values (the route asked about travels
// in headers and bodies, which are not recorded).
func (t *Telemetry) ProxyTransport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return otelhttp.NewTransport(base,
		otelhttp.WithTracerProvider(t.tp),
		otelhttp.WithMeterProvider(t.mp),
		otelhttp.WithPropagators(t.prop),
		otelhttp.WithSpanNameFormatter(func(_ string, r *http.Request) string { return "authz " + r.Method }),
	)
}

// knownMethods are the MCP methods an attribute may name; any other
// method (a client may send anything) is recorded as "_OTHER", so that
// no client can add label values.
var knownMethods = func() map[string]bool {
	m := map[string]bool{}
	for _, v := range []mcpconv.MethodNameAttr{
		mcpconv.MethodNameNotificationsCancelled, mcpconv.MethodNameInitialize, mcpconv.MethodNameNotificationsInitialized,
		mcpconv.MethodNameNotificationsProgress, mcpconv.MethodNamePing, mcpconv.MethodNameResourcesList,
		mcpconv.MethodNameResourcesTemplatesList, mcpconv.MethodNameResourcesRead, mcpconv.MethodNameResourcesSubscribe,
		mcpconv.MethodNameResourcesUnsubscribe, mcpconv.MethodNamePromptsList, mcpconv.MethodNamePromptsGet,
		mcpconv.MethodNameToolsList, mcpconv.MethodNameToolsCall, mcpconv.MethodNameLoggingSetLevel,
		mcpconv.MethodNameCompletionComplete, mcpconv.MethodNameRootsList, mcpconv.MethodNameElicitationCreate,
		mcpconv.MethodNameSamplingCreateMessage, mcpconv.MethodNameNotificationsRootsListChanged,
	} {
		m[string(v)] = true
	}
	// MCP 2026-07-28's discovery, which this semconv version predates.
	m["server/discover"] = true
	return m
}()

// other is the semantic conventions' value for a value outside a known
// set.
const other = "_OTHER"

func methodName(method string) string {
	if knownMethods[method] {
		return method
	}
	return other
}

// protocolVersion returns the request's protocol version if the SDK
// speaks it, else "_OTHER" ("" if the request has none).
func protocolVersion(req mcp.Request) string {
	pv, ok := req.(interface{ ProtocolVersion() string })
	if !ok {
		return ""
	}
	v := pv.ProtocolVersion()
	if v == "" {
		return ""
	}
	for _, s := range supportedVersions {
		if s == v {
			return v
		}
	}
	return other
}

var supportedVersions = mcp.SupportedProtocolVersions()
