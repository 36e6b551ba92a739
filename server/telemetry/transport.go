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
//	t.Transport(authz.Transport(base, "catalog", "http://catalog:8080", a, authz.Options{}), "catalog")
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
	ctx, span := tr.t.tracer.Start(r.Context(), method+" "+tmpl, trace.WithSpanKind(trace.SpanKindClient))
	defer span.End()
	out := r.Clone(ctx)
	tr.t.prop.Inject(ctx, propagation.HeaderCarrier(out.Header))

	resp, err := tr.base.RoundTrip(out)

	use := UpstreamRequest{Method: r.Method, Route: tmpl}
	k := upKey{service: tr.service.Value.AsString(), template: tmpl, method: method}
	if err != nil {
		use.Error = upstreamErrorType(err)
		k.errorType = use.Error
	} else {
		use.Status, k.status = resp.StatusCode, resp.StatusCode
		if resp.StatusCode >= 400 {
			k.errorType = strconv.Itoa(resp.StatusCode)
		}
	}
	if span.IsRecording() {
		var buf [7]attribute.KeyValue
		attrs := append(buf[:0], semconv.HTTPRequestMethodKey.String(method), semconv.URLTemplateKey.String(tmpl), tr.service)
		if host, port, err := net.SplitHostPort(r.URL.Host); err == nil {
			n, _ := strconv.Atoi(port)
			attrs = append(attrs, semconv.ServerAddressKey.String(host), semconv.ServerPortKey.Int(n))
		} else if r.URL.Host != "" {
			attrs = append(attrs, semconv.ServerAddressKey.String(r.URL.Host))
		}
		if k.status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(k.status))
		}
		if k.errorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
			span.SetStatus(codes.Error, k.errorType)
		}
		span.SetAttributes(attrs...)
	}
	tr.t.upstreamDuration.Record(ctx, time.Since(start).Seconds(), tr.t.upOpts.get(k, upAttrs))
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

// upKey is the attributes of an upstream request's measurement.
type upKey struct {
	service, template, method, errorType string
	status                               int
}

func upAttrs(k upKey) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		AttrService.String(k.service),
		semconv.URLTemplateKey.String(k.template),
		semconv.HTTPRequestMethodKey.String(k.method),
	}
	if k.status != 0 {
		attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(k.status))
	}
	if k.errorType != "" {
		attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
	}
	return attrs
}
