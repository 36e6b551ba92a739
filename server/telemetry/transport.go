package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// Transport decorates base, the transport of the upstream service
// serviceKey's client, for telemetry: every request becomes a client
// span named "{METHOD} {route template}" with the W3C trace context
// written into its headers (so the upstream continues the trace), and
// counts in toolroute.upstream.request.duration by template, method and
// status. It records the request in the call's audit record.
//
// The route template is the one of the calling tool's declared routes
// (tool.CallFromContext) the request falls under, the same match
// authz.Transport makes; a request under none is "_OTHER". The concrete
// path, which holds argument values, is recorded nowhere: the span has
// url.template, server.address and server.port, not url.full.
//
// Put it outside authz.Transport, so that requests authz refuses are
// observed too and the trace context travels with the forwarded request:
//
//	t.Transport(authz.Transport(base, "catalog", a), "catalog")
//
// The span ends when the response's headers arrive. Transport panics if
// base is nil.
func (t *Telemetry) Transport(base http.RoundTripper, serviceKey string) http.RoundTripper {
	if base == nil {
		panic("telemetry: Transport of a nil http.RoundTripper")
	}
	return &transport{t: t, base: base, prefix: "/" + serviceKey, service: AttrService.String(serviceKey)}
}

type transport struct {
	t       *Telemetry
	base    http.RoundTripper
	prefix  string
	service attribute.KeyValue
}

// template returns the route template of r among the calling tool's
// routes.
func (tr *transport) template(r *http.Request) string {
	call := tool.CallFromContext(r.Context())
	if call == nil {
		return other
	}
	p := tr.prefix + r.URL.EscapedPath()
	for _, rt := range call.Routes {
		if rt.Match(r.Method, p) {
			return rt.URI
		}
	}
	return other
}

func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	start := time.Now()
	tmpl := tr.template(r)
	method := r.Method
	if _, ok := knownHTTPMethods[method]; !ok {
		method = other
	}
	attrs := []attribute.KeyValue{
		semconv.HTTPRequestMethodKey.String(method),
		semconv.URLTemplateKey.String(tmpl),
		tr.service,
	}
	spanAttrs := attrs
	if host, port, err := net.SplitHostPort(r.URL.Host); err == nil {
		n, _ := strconv.Atoi(port)
		spanAttrs = append(spanAttrs[:len(spanAttrs):len(spanAttrs)], semconv.ServerAddressKey.String(host), semconv.ServerPortKey.Int(n))
	} else if r.URL.Host != "" {
		spanAttrs = append(spanAttrs[:len(spanAttrs):len(spanAttrs)], semconv.ServerAddressKey.String(r.URL.Host))
	}
	ctx, span := tr.t.tracer.Start(r.Context(), method+" "+tmpl, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(spanAttrs...))
	defer span.End()
	out := r.Clone(ctx)
	tr.t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))

	resp, err := tr.base.RoundTrip(out)

	use := UpstreamRequest{Method: r.Method, Route: tmpl}
	if err != nil {
		use.Error = upstreamErrorType(err)
		attrs = append(attrs, semconv.ErrorTypeKey.String(use.Error))
		span.SetAttributes(semconv.ErrorTypeKey.String(use.Error))
		span.SetStatus(codes.Error, use.Error)
	} else {
		use.Status = resp.StatusCode
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(resp.StatusCode))
		span.SetAttributes(semconv.HTTPResponseStatusCodeKey.Int(resp.StatusCode))
		if resp.StatusCode >= 400 {
			et := strconv.Itoa(resp.StatusCode)
			attrs = append(attrs, semconv.ErrorTypeKey.String(et))
			span.SetAttributes(semconv.ErrorTypeKey.String(et))
			span.SetStatus(codes.Error, "")
		}
	}
	tr.t.upstreamDuration.Record(ctx, time.Since(start).Seconds(), metric.WithAttributes(attrs...))
	if st := requestFrom(ctx); st != nil {
		st.noteUpstream(use)
	}
	return resp, err
}

// upstreamErrorType classes an upstream request's error: a refusal by
// authz.Transport, a timeout or cancellation, or "_OTHER".
func upstreamErrorType(err error) string {
	var (
		denied *authz.DeniedError
		unauth *authz.UnauthenticatedError
		outage *authz.OutageError
		nerr   net.Error
	)
	switch {
	case errors.As(err, &denied):
		return "denied"
	case errors.As(err, &unauth):
		return "unauthenticated"
	case errors.As(err, &outage):
		return "outage"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "cancelled"
	case errors.As(err, &nerr) && nerr.Timeout():
		return "timeout"
	}
	return other
}

var knownHTTPMethods = map[string]struct{}{
	http.MethodGet: {}, http.MethodHead: {}, http.MethodPost: {}, http.MethodPut: {}, http.MethodPatch: {},
	http.MethodDelete: {}, http.MethodConnect: {}, http.MethodOptions: {}, http.MethodTrace: {},
}
