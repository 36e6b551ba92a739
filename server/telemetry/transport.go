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

// RoundTrip sends r under its span. Its own frame is small, because the
// base transport's work is deep: the span's and the metric's work is in
// begin and end (see Telemetry.serve). The span ends when RoundTrip
// returns, or panics.
func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	u := tr.begin(r)
	defer u.span.End()
	resp, err := tr.base.RoundTrip(u.out)
	tr.end(r, &u, resp, err)
	return resp, err
}

// upstreamCall is one upstream request under way.
type upstreamCall struct {
	out    *http.Request // r with the span's context and trace headers
	span   trace.Span
	start  time.Time
	tmpl   string
	method string // the method, or "_OTHER"
}

// begin starts the request's span, with the attributes known before it
// is sent, and returns the request to send: r with the span's context
// and the trace context in its headers.
func (tr *transport) begin(r *http.Request) upstreamCall {
	u := upstreamCall{start: time.Now(), tmpl: tr.template(r), method: r.Method}
	if _, ok := knownHTTPMethods[u.method]; !ok {
		u.method = other
	}
	s := tr.t.upSpans.get(upSpanKey{tr.service, u.tmpl, u.method, r.URL.Host}, newUpstreamSpan)
	var ctx context.Context
	ctx, u.span = tr.t.tracer.Start(r.Context(), s.name, s.opts...)
	// A shallow copy with headers of its own: a RoundTripper must not
	// change the request it is given.
	u.out = r.WithContext(ctx)
	u.out.Header = r.Header.Clone()
	if u.out.Header == nil {
		u.out.Header = http.Header{}
	}
	tr.t.prop.Inject(ctx, propagation.HeaderCarrier(u.out.Header))
	return u
}

// end records the request's answer: its span's status (RoundTrip ends
// the span), its metric and the call's audit record.
func (tr *transport) end(r *http.Request, u *upstreamCall, resp *http.Response, err error) {
	ctx := u.out.Context()
	use := UpstreamRequest{Method: r.Method, Route: u.tmpl}
	k := upKey{service: tr.service.Value.AsString(), template: u.tmpl, method: u.method}
	if err != nil {
		use.Error = upstreamErrorType(err)
		k.errorType = use.Error
	} else {
		use.Status, k.status = resp.StatusCode, resp.StatusCode
		if resp.StatusCode >= 400 {
			k.errorType = strconv.Itoa(resp.StatusCode)
		}
	}
	m := tr.t.upOpts.get(k, upMeasurement)
	if u.span.IsRecording() {
		u.span.SetAttributes(m.span...)
		if k.errorType != "" {
			u.span.SetStatus(codes.Error, k.errorType)
		}
	}
	tr.t.upstreamDuration.Record(ctx, time.Since(u.start).Seconds(), m.rec...)
	if st := requestFrom(ctx); st != nil {
		st.noteUpstream(use)
	}
}

// upSpanKey is what an upstream span's name and start attributes are
// made of: its service, route template, method and host. Templates and
// methods come from bounded sets; hosts are a service's (a tool chooses
// them, so Telemetry.upSpans bounds them too).
type upSpanKey struct {
	service                attribute.KeyValue
	template, method, host string
}

// upstreamSpan is the name and start options of the upstream spans of
// one upSpanKey: the attributes known before a request is sent are on
// its span from the start, where a sampler sees them.
type upstreamSpan struct {
	name string
	opts []trace.SpanStartOption
}

func newUpstreamSpan(k upSpanKey) *upstreamSpan {
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(k.method), semconv.URLTemplateKey.String(k.template), k.service}
	if h, port, err := net.SplitHostPort(k.host); err == nil {
		n, _ := strconv.Atoi(port)
		attrs = append(attrs, semconv.ServerAddressKey.String(h), semconv.ServerPortKey.Int(n))
	} else if k.host != "" {
		attrs = append(attrs, semconv.ServerAddressKey.String(k.host))
	}
	return &upstreamSpan{name: k.method + " " + k.template, opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}}
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

// upMeasurement is the measurement of k, and the attributes of its
// span at its end: http.response.status_code and error.type.
func upMeasurement(k upKey) *measurement {
	attrs := []attribute.KeyValue{
		AttrService.String(k.service),
		semconv.URLTemplateKey.String(k.template),
		semconv.HTTPRequestMethodKey.String(k.method),
	}
	var span []attribute.KeyValue
	if k.status != 0 {
		span = append(span, semconv.HTTPResponseStatusCodeKey.Int(k.status))
	}
	if k.errorType != "" {
		span = append(span, semconv.ErrorTypeKey.String(k.errorType))
	}
	return newMeasurement(append(attrs, span...), span)
}
