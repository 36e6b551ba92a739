package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"strings"
	"sync"

	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/core/redact"
	"github.com/toolroute/toolroute/tool"
)

// MaxResponseBytes bounds the body of a 2xx answer that Forward and Call
// decode: 16 MiB. A longer one is refused (the client sees "upstream sent
// an invalid response"), and memory follows the bytes received, never a
// declared Content-Length.
const MaxResponseBytes = 16 << 20

// unavailableError is what a client sees of a request that could not be
// sent or answered: a fixed text. The cause, logged where it happened,
// stays in the chain.
type unavailableError struct {
	text  string
	cause error
}

func (e *unavailableError) Error() string { return e.text }
func (e *unavailableError) Unwrap() error { return e.cause }

const (
	textUnavailable = "upstream unavailable"
	textInvalid     = "upstream sent an invalid response"
)

// argumentError is a request that could not be built from the call's
// arguments (a path value that could leave its segment, a header value
// with a control character): nothing was sent.
type argumentError struct {
	name string // the argument's JSON name
	err  error
}

func (e *argumentError) Error() string { return fmt.Sprintf("invalid argument %q: %v", e.name, e.err) }
func (e *argumentError) Unwrap() error { return e.err }

// logged is the optional method of a container that gives its logger.
type logged interface{ Logger() *slog.Logger }

// loggerOf returns c's logger, or a redacting [slog.Default].
func loggerOf(c any) *slog.Logger {
	if l, ok := c.(logged); ok {
		if lg := l.Logger(); lg != nil {
			return lg
		}
	}
	// slog.Default is not redacted, and a cause may quote what the
	// request carried.
	return slog.New(redact.New(slog.Default().Handler(), func(context.Context) string { return "" }))
}

// origins caches the checked origins of the upstreams: origin → the
// scheme://host without a trailing slash, or the error.
var origins sync.Map

type originInfo struct {
	base string
	err  error
}

func checkOrigin(key, origin string) (string, error) {
	if o, ok := origins.Load(origin); ok {
		oi := o.(originInfo)
		return oi.base, oi.err
	}
	var oi originInfo
	u, err := url.Parse(origin)
	switch {
	case origin == "":
		oi.err = fmt.Errorf("no origin for the upstream service %q: the container's Upstream(%q) gave none (does a tool declare the service key?)", key, key)
	case err != nil:
		oi.err = fmt.Errorf("origin of the upstream service %q: %v", key, err)
	case u.Scheme != "http" && u.Scheme != "https", u.Host == "", u.User != nil, u.Path != "" && u.Path != "/", u.RawQuery != "", u.ForceQuery, u.Fragment != "", u.Opaque != "":
		oi.err = fmt.Errorf("origin %q of the upstream service %q is not an origin: want http://host[:port] or https://host[:port] (request paths are the routes' own)", u.Redacted(), key)
	default:
		oi.base = u.Scheme + "://" + u.Host
	}
	if oi.err != nil {
		return "", oi.err // not cached: a container may give another origin later
	}
	origins.Store(origin, oi)
	return oi.base, nil
}

// send sends the request of p built from in (a value of p.in, or an
// invalid Value for none) through c's client for p's service, and
// decodes a 2xx answer into out (a pointer; body, if not nil, the index
// of out's field the whole answer decodes into).
func send(ctx context.Context, c Clients, p *plan, in reflect.Value, out any, body []int) error {
	if p.err != nil {
		return p.err
	}
	req, err := p.request(ctx, c, in)
	if err != nil {
		return err
	}
	client := req.client
	resp, err := client.Do(req.Request)
	if err != nil {
		return transportError(ctx, c, p.route, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		data, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		if ctx.Err() != nil {
			return ctx.Err()
		}
		drain(resp.Body)
		mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
		return newError(p.route, resp.StatusCode, mt, data, secretsOf(resp, req.Request))
	}
	if resp.StatusCode == http.StatusNoContent || resp.StatusCode == http.StatusResetContent || req.Method == http.MethodHead || resp.ContentLength == 0 {
		drain(resp.Body)
		return nil
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return invalid(ctx, c, p.route, fmt.Errorf("reading the answer: %w", stripURL(err)))
	}
	if len(data) > MaxResponseBytes {
		return invalid(ctx, c, p.route, fmt.Errorf("the answer exceeds %d bytes (upstream.MaxResponseBytes)", MaxResponseBytes))
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil
	}
	ct := resp.Header.Get("Content-Type")
	if mt, _, err := mime.ParseMediaType(ct); err != nil || !isJSON(mt) {
		return invalid(ctx, c, p.route, fmt.Errorf("the answer's content type is %q, not application/json or +json", ct))
	}
	if body != nil {
		v := reflect.ValueOf(out).Elem()
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		out = v.FieldByIndex(body).Addr().Interface()
	}
	if err := json.Unmarshal(data, out); err != nil {
		return invalid(ctx, c, p.route, fmt.Errorf("decoding the answer into %T: %w", out, err))
	}
	return nil
}

// drain reads what is left of a body, a bounded amount, so that its
// connection can be reused.
func drain(body io.Reader) { io.Copy(io.Discard, io.LimitReader(body, maxErrorBody)) }

// transportError is what the caller gets of a request the client could
// not send or have answered (err is the client's error): the call's own
// end (its context's error), a refusal with a text of its own (authz's
// upstream transport: the client sees its text, and it logged the
// refusal), or "upstream unavailable", the cause logged.
func transportError(ctx context.Context, c Clients, r tool.Route, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	cause := stripURL(err)
	var shown call.ClientTexter
	if errors.As(cause, &shown) {
		return fmt.Errorf("upstream %s: %w", r, cause)
	}
	logFailure(ctx, c, r, "upstream: request failed", cause)
	return &unavailableError{text: textUnavailable, cause: fmt.Errorf("upstream %s: %w", r, cause)}
}

// invalid is the error of a 2xx answer that does not decode: "upstream
// sent an invalid response", the cause logged.
func invalid(ctx context.Context, c Clients, r tool.Route, cause error) error {
	logFailure(ctx, c, r, "upstream: invalid response", cause)
	return &unavailableError{text: textInvalid, cause: fmt.Errorf("upstream %s: %w", r, cause)}
}

func logFailure(ctx context.Context, c Clients, r tool.Route, msg string, cause error) {
	attrs := []any{slog.String("route", r.String()), slog.Any("error", cause)}
	if tc := tool.CallFromContext(ctx); tc != nil {
		attrs = append([]any{slog.String("tool", tc.Tool)}, attrs...)
	}
	loggerOf(c).ErrorContext(ctx, msg, attrs...)
}

// stripURL returns the cause of an http.Client's *url.Error: its text
// repeats the request's URL.
func stripURL(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
}

// outgoing is a request ready to send, and the client to send it with.
type outgoing struct {
	*http.Request
	client *http.Client
}

// request builds the request of p from in.
func (p *plan) request(ctx context.Context, c Clients, in reflect.Value) (outgoing, error) {
	origin, client := c.Upstream(p.key)
	base, err := checkOrigin(p.key, origin)
	if err != nil {
		logFailure(ctx, c, p.route, "upstream: no upstream", err)
		return outgoing{}, &unavailableError{text: textUnavailable, cause: err}
	}
	if client == nil {
		client = http.DefaultClient
	}
	if in.IsValid() {
		for in.Kind() == reflect.Pointer {
			if in.IsNil() {
				in = reflect.Zero(in.Type().Elem())
				continue
			}
			in = in.Elem()
		}
	}
	field := func(f *field) (reflect.Value, bool) {
		if !in.IsValid() {
			return reflect.Value{}, false
		}
		v, err := in.FieldByIndexErr(f.index)
		if err != nil {
			return reflect.Value{}, false // a nil embedded pointer: absent
		}
		if f.omit && v.IsZero() {
			return reflect.Value{}, false
		}
		return v, true
	}

	bound := p.route
	if len(p.path) > 0 {
		values := make(map[string]string, len(p.path))
		for _, f := range p.path {
			v, err := in.FieldByIndexErr(f.index)
			if err != nil {
				v = reflect.Zero(f.typ)
			}
			f.format(v, func(s string) { values[f.name] = s })
		}
		if bound, err = p.route.Bind(values); err != nil {
			return outgoing{}, bindError(p, err)
		}
	}
	var u strings.Builder
	u.Grow(len(base) + len(bound.URI) + 32)
	u.WriteString(base)
	u.WriteString(bound.ServicePath())
	sep := byte('?')
	for _, f := range p.query {
		v, ok := field(f)
		if !ok {
			continue
		}
		err := f.format(v, func(s string) {
			u.WriteByte(sep)
			sep = '&'
			u.WriteString(url.QueryEscape(f.name))
			u.WriteByte('=')
			u.WriteString(url.QueryEscape(s))
		})
		if err != nil {
			return outgoing{}, &argumentError{name: f.name, err: err}
		}
	}

	var data []byte
	switch {
	case p.body != nil:
		if v, ok := field(p.body); ok && !isNil(v) {
			if data, err = json.Marshal(v.Interface()); err != nil {
				return outgoing{}, &argumentError{name: p.body.name, err: err}
			}
		}
	case p.object != nil:
		if data, err = p.encodeProps(in); err != nil {
			return outgoing{}, fmt.Errorf("upstream %s: encoding the body: %w", p.route, err)
		}
	}
	var rd io.Reader
	if data != nil {
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, p.route.Method, u.String(), rd)
	if err != nil {
		return outgoing{}, fmt.Errorf("upstream %s: %w", p.route, err)
	}
	req.Header.Set("Accept", "application/json")
	if data != nil {
		ct := "application/json"
		if p.body != nil && p.body.media != "" {
			ct = p.body.media
		}
		req.Header.Set("Content-Type", ct)
	}
	for _, f := range p.header {
		v, ok := field(f)
		if !ok {
			continue
		}
		var bad error
		err := f.format(v, func(s string) {
			if strings.ContainsFunc(s, func(c rune) bool { return c < ' ' && c != '\t' || c == 0x7f }) {
				bad = errors.New("a header value must not hold control characters")
				return
			}
			req.Header.Add(f.name, s)
		})
		if err = errors.Join(err, bad); err != nil {
			return outgoing{}, &argumentError{name: f.name, err: err}
		}
	}
	return outgoing{Request: req, client: client}, nil
}

func isNil(v reflect.Value) bool {
	switch v.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice:
		return v.IsNil()
	}
	return false
}

// bindError is the error of a path value Bind refused: the argument it
// came from, and Bind's reason without the route (it reaches the
// client).
func bindError(p *plan, err error) error {
	why := errors.Unwrap(err)
	if why == nil {
		why = err
	}
	for _, f := range p.path {
		// Bind's text: "bind ROUTE: {NAME}: REASON".
		if strings.Contains(err.Error(), ": {"+f.name+"}: ") {
			return &argumentError{name: f.name, err: why}
		}
	}
	return fmt.Errorf("upstream %s: %w", p.route, err)
}

// Unavailable reports whether err, a call's error, says that an upstream
// could not be reached or failed: a request that could not be sent or
// answered ("upstream unavailable"), an invalid 2xx answer, or an answer
// of status 500 or more ([*Error]). An authorization refusal, a bad
// argument, a 4xx answer and a cancelled call are not. resultcache
// serves an expired result on such errors only, for tools that opt into
// it.
func Unavailable(err error) bool {
	var ue *unavailableError
	if errors.As(err, &ue) {
		return true
	}
	var ae *Error
	return errors.As(err, &ae) && ae.Status >= 500
}
