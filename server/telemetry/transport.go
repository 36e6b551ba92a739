package telemetry

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strconv"
	"sync"
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
// begin and end (see Telemetry.serve).
func (tr *transport) RoundTrip(r *http.Request) (*http.Response, error) {
	u := tr.begin(r)
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
	s := tr.t.upSpans.get(tr, u.tmpl, u.method, r.URL.Host)
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

// end records the request's answer: its span's status, its metric and
// the call's audit record.
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
	if u.span.IsRecording() {
		var buf [2]attribute.KeyValue
		attrs := buf[:0]
		if k.status != 0 {
			attrs = append(attrs, semconv.HTTPResponseStatusCodeKey.Int(k.status))
		}
		if k.errorType != "" {
			attrs = append(attrs, semconv.ErrorTypeKey.String(k.errorType))
			u.span.SetStatus(codes.Error, k.errorType)
		}
		u.span.SetAttributes(attrs...)
	}
	u.span.End()
	tr.t.upstreamDuration.Record(ctx, time.Since(u.start).Seconds(), tr.t.upOpts.get(k, upAttrs))
	if st := requestFrom(ctx); st != nil {
		st.noteUpstream(use)
	}
}

// upstreamSpans are the name and start options of upstream spans, by
// route template, method and host, made once each: the three are known
// before a request is sent, so its span starts with them (a sampler sees
// them). Templates and methods come from bounded sets; hosts are a
// service's, but a tool chooses them, so at most maxUpstreamSpans are
// kept and others are made per request.
type upstreamSpans struct {
	mu sync.RWMutex
	m  map[upSpanKey]*upstreamSpan
}

const maxUpstreamSpans = 1024

type upSpanKey struct{ service, template, method, host string }

type upstreamSpan struct {
	name string
	opts []trace.SpanStartOption
}

func (c *upstreamSpans) get(tr *transport, tmpl, method, host string) *upstreamSpan {
	k := upSpanKey{tr.prefix, tmpl, method, host}
	c.mu.RLock()
	s, ok := c.m[k]
	c.mu.RUnlock()
	if ok {
		return s
	}
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(method), semconv.URLTemplateKey.String(tmpl), tr.service}
	if h, port, err := net.SplitHostPort(host); err == nil {
		n, _ := strconv.Atoi(port)
		attrs = append(attrs, semconv.ServerAddressKey.String(h), semconv.ServerPortKey.Int(n))
	} else if host != "" {
		attrs = append(attrs, semconv.ServerAddressKey.String(host))
	}
	s = &upstreamSpan{name: method + " " + tmpl, opts: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...)}}
	c.mu.Lock()
	if c.m == nil {
		c.m = map[upSpanKey]*upstreamSpan{}
	}
	if len(c.m) < maxUpstreamSpans {
		c.m[k] = s
	}
	c.mu.Unlock()
	return s
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
