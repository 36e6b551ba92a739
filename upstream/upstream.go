package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// Clients is where a typed call finds its upstream service: the tools'
// container implements it. service.Upstreams (the kit's) implements it,
// so a container embeds it:
//
//	type Deps struct{ service.Upstreams }
//
// Upstream returns the origin of the service key ("http://host:port",
// without a path) and the client to send its requests with (nil selects
// [http.DefaultClient]); an empty origin for a key it does not know.
//
// If the container also has a method Logger() *slog.Logger, the causes
// of failed requests are logged there; otherwise to [slog.Default],
// with any "Bearer TOKEN" taken out.
type Clients interface {
	Upstream(key string) (origin string, client *http.Client)
}

// Endpoints is a fixed [Clients], by service key: for tests, and for
// services without the kit.
type Endpoints map[string]Endpoint

// Endpoint is one upstream service of [Endpoints].
type Endpoint struct {
	// Origin is the service's origin, "http://host:port".
	Origin string
	// Client sends its requests; nil selects [http.DefaultClient]. Give
	// it authz's upstream transport (authz.Transport) for the checks,
	// the caller's bearer and origin pinning.
	Client *http.Client
}

// Upstream returns the origin and client of key, "" and nil if e has
// none.
func (e Endpoints) Upstream(key string) (string, *http.Client) {
	ep := e[key]
	return ep.Origin, ep.Client
}

// Forward is the handler of a tool whose work is one upstream request on
// r: each call's arguments, decoded into In, become the request (see the
// package doc for how In's fields map onto it), sent through the
// container's client for r's service key (its first URI segment), and a
// 2xx answer becomes the result, decoded into Out. Errors are as for
// [Call].
//
// What can be checked when Forward is called is checked then, and the
// registry refuses the tool at Register with every problem, in its
// message form: an invalid route; an In that is not a struct; a
// placeholder of r without a field of a type that formats as one path
// segment; an in:"path" field that is not a placeholder of r, or an
// in:"query", in:"header" or in:"body" one that is; a query or header
// field of a type that does not format as a parameter; a header the
// transport owns; body fields on a method without a body; two in:"body"
// fields, or one with body properties besides; a media type that is not
// a JSON one; an option other than a body's media type and a query or
// header list's "comma", or "comma" on a field that is no list. The registry also
// refuses the tool if r is not among its VisibilityRoutes (see
// [tool.Handler.Sending]).
//
// In and Out must reflect to object schemas, as for [tool.Handle]; for
// an answer that is not a JSON object (a list), give Out one field
// tagged in:"body", which the whole answer decodes into:
//
//	type petList struct {
//		Pets []Pet `json:"pets" in:"body"`
//	}
func Forward[C Clients, In, Out any](r tool.Route) tool.Handler[C] {
	p := newPlan(r, reflect.TypeFor[In]())
	body, outErr := outBody(reflect.TypeFor[Out]())
	h := tool.Handle(func(ctx context.Context, c C, _ *mcp.CallToolRequest, in In) (Out, error) {
		var out Out
		err := send(ctx, c, p, reflect.ValueOf(&in).Elem(), &out, body)
		return out, err
	})
	return h.Sending([]tool.Route{r}, errors.Join(p.err, onRoute(r, outErr)))
}

// Call sends one request on r built from in, through c's client for r's
// service key, and decodes the answer: the machinery of [Forward], for a
// handler with logic of its own. in is a struct as for Forward's In, a
// pointer to one, or nil for a request without arguments; r must be one
// of the calling tool's routes (authz's upstream transport refuses any
// other). The problems Forward's registration reports come back as
// Call's error, for each call, before anything is sent.
//
// A 2xx answer decodes into Out (a JSON body of at most
// [MaxResponseBytes], of content type application/json or +json; 204 or
// an empty body gives the zero Out). The errors a tool's client may be
// shown, whatever wraps them:
//
//   - a non-2xx answer: an *[Error], shown as its ClientText (the
//     status and the upstream's own message);
//   - an argument the request cannot carry (a path value that could
//     leave its segment, a header value with a control character):
//     invalid argument "NAME": why; nothing is sent;
//   - a request refused by authz's upstream transport: its error, shown
//     as its text ("not authorized (insufficient_scope)", ...);
//   - the call's own end: its context's error, as it is;
//   - a request that could not be sent or answered: "upstream
//     unavailable"; a 2xx answer that is not JSON, too long or does not
//     decode into Out: "upstream sent an invalid response". The cause is
//     logged (see [Clients]), and stays in the error's chain.
func Call[Out any](ctx context.Context, c Clients, r tool.Route, in any) (Out, error) {
	var out Out
	if c == nil {
		return out, fmt.Errorf("upstream %s: nil Clients", r)
	}
	var t reflect.Type
	var v reflect.Value
	if in != nil {
		v = reflect.ValueOf(in)
		t = v.Type()
	}
	o := outFor(reflect.TypeFor[Out]())
	if o.err != nil {
		return out, onRoute(r, o.err)
	}
	err := send(ctx, c, planFor(r, t), v, &out, o.index)
	return out, err
}

// onRoute returns err with each error it joins prefixed by "upstream
// ROUTE: ", nil for nil.
func onRoute(r tool.Route, err error) error {
	if err == nil {
		return nil
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	out := make([]error, len(errs))
	for i, e := range errs {
		out[i] = fmt.Errorf("upstream %s: %w", r, e)
	}
	return errors.Join(out...)
}
