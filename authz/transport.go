package authz

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"

	logredact "github.com/toolroute/toolroute/internal/core/redact"
	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/tool"
)

// Transport returns an [http.RoundTripper] for the upstream service
// serviceKey at origin ("http://host:port", "https://host": the service's
// base URL) that checks every request a tool sends before base sends it
// (nil base selects [http.DefaultTransport]):
//
//   - the request must be made within a tool call: its context carries
//     the [tool.Call] the registry puts there, and the [Caller];
//   - it must go to origin: the same scheme, host and port (a missing
//     port is the scheme's default; host names compare without case). A
//     request to any other origin would carry the caller's bearer to a
//     server that is not the service: a configuration bug, refused and
//     logged at error level;
//   - its route, {"/"+serviceKey+req.URL.EscapedPath(), req.Method}, must
//     [tool.Route.Match] one of the calling tool's declared routes. A
//     request outside them is a configuration bug (the tool's declaration
//     does not say what it does): refused and logged at error level;
//   - its raw query must be a well-formed RFC 3986 query (what
//     [net/url.Values.Encode] writes): net/http sends it as it is, and a
//     space or control character would rewrite the request line;
//   - a, the [Authorizer], must allow the caller that route. Give it the
//     server's (server.Options.Authorizer), or another explicitly: the
//     transport never takes one from the request's context.
//
// Nothing is sent otherwise. The request then goes out with the caller's
// bearer as "Authorization: Bearer TOKEN" (a caller without a bearer
// leaves the request's own Authorization header alone).
//
// A refused request fails with an error (which an [http.Client] wraps in a
// [*net/url.Error]) that unwraps to a *[DeniedError] "not authorized
// (insufficient_scope)", an *[UnauthenticatedError] "not authenticated" or
// an *[OutageError] "authorization service unavailable"; a handler made
// by tool.Handle shows a client that text whatever wraps it. A redirect
// to another host or scheme is refused too, so a bearer never follows
// one.
//
// Refusals go to opts.Logger (nil: [slog.Default]) with
// the caller's bearer, and any "Bearer TOKEN", taken out of each record
// (as server.RedactingHandler does). Bearers are never logged.
//
// Transport panics if a is nil (fail closed: pass authz.AllowAll() to
// allow everything explicitly), if serviceKey is not a single plain path
// segment, or if origin is not an http or https URL with a host and
// without user information, path (other than "/"), query or fragment.
func Transport(base http.RoundTripper, serviceKey, origin string, a Authorizer, opts Options) http.RoundTripper {
	if serviceKey == "" || serviceKey == "." || serviceKey == ".." || strings.ContainsAny(serviceKey, "/?#%{} \t\r\n") {
		panic(fmt.Sprintf("authz: Transport: service key %q is not a single plain path segment", serviceKey))
	}
	u, err := url.Parse(origin)
	switch {
	case err != nil:
		panic(fmt.Sprintf("authz: Transport: origin of service %q: %v", serviceKey, err))
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil, u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "", u.Opaque != "":
		panic(fmt.Sprintf("authz: Transport: origin %q of service %q is not an origin: want http://host[:port] or https://host[:port]", u.Redacted(), serviceKey))
	}
	if a == nil {
		panic(fmt.Sprintf("authz: Transport: service %q: nil Authorizer (give it the server's, or authz.AllowAll() to allow everything explicitly)", serviceKey))
	}
	if base == nil {
		base = http.DefaultTransport
	}
	t := &transport{base: base, key: serviceKey, origin: originOf(u), prefix: "/" + serviceKey, a: a}
	if opts.Logger != nil {
		t.logger = redacting(opts.Logger)
	}
	return t
}

type transport struct {
	base   http.RoundTripper
	key    string
	origin string // scheme://host:port, the port explicit, lower case
	prefix string // "/" + key
	a      Authorizer
	logger *slog.Logger // redacting; nil: slog.Default's, redacted
}

// originOf returns u's origin as "scheme://host:port", the port explicit
// (the scheme's default if u has none), scheme and host in lower case.
func originOf(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		switch scheme {
		case "http":
			port = "80"
		case "https":
			port = "443"
		}
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// log returns the logger of t's refusals.
func (t *transport) log() *slog.Logger {
	if t.logger != nil {
		return t.logger
	}
	// A refused request's path holds values the caller chose, and
	// slog.Default is not redacted.
	return redacting(slog.Default())
}

// redacting returns l with the caller's bearer, and any "Bearer TOKEN",
// taken out of each record.
func redacting(l *slog.Logger) *slog.Logger {
	return slog.New(logredact.New(l.Handler(), func(ctx context.Context) string {
		c, _ := CallerFromContext(ctx)
		return c.Bearer
	}))
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	caller, err := t.check(req)
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	if caller.Bearer != "" {
		r2 := new(http.Request)
		*r2 = *req
		r2.Header = req.Header.Clone()
		if r2.Header == nil {
			r2.Header = http.Header{}
		}
		r2.Header.Set("Authorization", "Bearer "+caller.Bearer)
		req = r2
	}
	return t.base.RoundTrip(req)
}

// check decides whether req may be sent, and returns the caller it is sent
// for.
func (t *transport) check(req *http.Request) (Caller, error) {
	ctx := req.Context()
	log := t.log // built only to log a refusal
	call := tool.CallFromContext(ctx)
	if call == nil {
		log().ErrorContext(ctx, "authz: upstream request outside a tool call (configuration bug: use this transport only from tool handlers, with their context); refused",
			slog.String("service", t.key), slog.String("method", req.Method), slog.String("path", pathOf(req)))
		return Caller{}, &DeniedError{Reason: "upstream request outside a tool call"}
	}
	if req.URL == nil || req.URL.Opaque != "" {
		log().ErrorContext(ctx, "authz: upstream request with an opaque URL; refused", slog.String("tool", call.Tool), slog.String("service", t.key))
		return Caller{}, &DeniedError{Reason: "opaque request URL"}
	}
	if prev := req.Response; prev != nil && prev.Request != nil && prev.Request.URL != nil &&
		(prev.Request.URL.Host != req.URL.Host || prev.Request.URL.Scheme != req.URL.Scheme) {
		log().WarnContext(ctx, "authz: upstream redirect to another host or scheme; refused", slog.String("tool", call.Tool), slog.String("service", t.key),
			slog.String("from", prev.Request.URL.Scheme+"://"+prev.Request.URL.Host), slog.String("to", req.URL.Scheme+"://"+req.URL.Host))
		return Caller{}, &DeniedError{Reason: "redirect to another host or scheme"}
	}
	if o := originOf(req.URL); o != t.origin {
		log().ErrorContext(ctx, "authz: upstream request to another origin than its service's (configuration bug: send a service's requests to the origin its transport is built for); refused",
			slog.String("tool", call.Tool), slog.String("service", t.key), slog.String("origin", t.origin), slog.String("to", truncate.String(o)))
		return Caller{}, &DeniedError{Reason: "request to another origin than the service's"}
	}
	if call.ServiceKey != t.key {
		log().ErrorContext(ctx, "authz: upstream request of a tool to another service's transport (configuration bug: give the tool the ServiceKey of the client it uses); refused",
			slog.String("tool", call.Tool), slog.String("tool_service", call.ServiceKey), slog.String("service", t.key))
		return Caller{}, &DeniedError{Reason: fmt.Sprintf("tool %q of service %q used the transport of service %q", call.Tool, call.ServiceKey, t.key)}
	}
	escaped := req.URL.EscapedPath()
	if !strings.HasPrefix(escaped, "/") {
		// "/cat" + "alog/x" would be checked as a route of service "catalog".
		log().ErrorContext(ctx, "authz: upstream request path does not start with \"/\"; refused", slog.String("tool", call.Tool), slog.String("service", t.key), slog.String("path", escaped))
		return Caller{}, &DeniedError{Reason: "relative request path"}
	}
	if err := t.checkQuery(req, call.Tool); err != nil {
		return Caller{}, err
	}
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	route := tool.Route{URI: t.prefix + escaped, Method: method}
	declared := false
	for _, r := range call.Routes {
		if r.Match(method, route.URI) {
			declared = true
			break
		}
	}
	caller, hasCaller := CallerFromContext(ctx)
	if !declared {
		log().ErrorContext(ctx, "authz: upstream request outside the tool's declared routes (configuration bug: declare the route in the tool's VisibilityRoutes); refused",
			slog.String("tool", call.Tool), slog.String("service", t.key), slog.String("route", route.String()), slog.Any("declared", call.Routes))
		return Caller{}, &DeniedError{Route: route, Subject: caller.Subject, Reason: fmt.Sprintf("route not declared by tool %q", call.Tool)}
	}
	if !hasCaller {
		log().ErrorContext(ctx, "authz: upstream request without a caller in the context (the server must put one there); refused",
			slog.String("tool", call.Tool), slog.String("route", route.String()))
		return Caller{}, &UnauthenticatedError{Reason: "no caller in the context"}
	}
	err := t.a.Allow(ctx, caller, route)
	if err == nil {
		return caller, nil
	}
	var denied *DeniedError
	var unauth *UnauthenticatedError
	var outage *OutageError
	switch {
	case errors.As(err, &denied):
		log().InfoContext(ctx, "authz: upstream request denied", slog.String("tool", call.Tool), slog.String("route", route.String()), slog.Any("caller", caller), slog.String("reason", redactText(denied.Reason, caller)))
		return Caller{}, denied
	case errors.As(err, &unauth):
		log().InfoContext(ctx, "authz: upstream request refused: caller not authenticated", slog.String("tool", call.Tool), slog.String("route", route.String()), slog.Any("caller", caller), slog.String("reason", redactText(unauth.Reason, caller)))
		return Caller{}, unauth
	case !errors.As(err, &outage):
		outage = &OutageError{Err: err}
	}
	log().WarnContext(ctx, "authz: upstream request refused: authorization service unavailable", slog.String("tool", call.Tool), slog.String("route", route.String()), slog.Any("caller", caller), slog.String("cause", redact(outage, caller)))
	return Caller{}, outage
}

func pathOf(req *http.Request) string {
	if req.URL == nil {
		return ""
	}
	return req.URL.EscapedPath()
}
