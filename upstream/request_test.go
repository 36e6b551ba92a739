package upstream_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

type okResult struct {
	OK bool `json:"ok"`
}

type getArgs struct {
	ID string `json:"id"` // untagged, named as the placeholder: a path field
}

type code string

type codeArgs struct {
	Code code `json:"code" in:"path"`
	N    int  `json:"n" in:"path"`
	On   bool `json:"on" in:"path"`
}

type searchArgs struct {
	Org       string     `json:"org" in:"path"`
	Q         string     `json:"q" in:"query"`
	Tags      []string   `json:"tag,omitempty" in:"query"`
	Limit     int        `json:"limit,omitempty" in:"query"`
	Since     *time.Time `json:"since,omitempty" in:"query"`
	Exact     bool       `json:"exact,omitempty" in:"query"`
	Min       float64    `json:"min,omitempty" in:"query"`
	RequestID string     `json:"X-Request-Id,omitempty" in:"header"`
	XTag      []string   `json:"X-Tag,omitempty" in:"header"`
}

type createArgs struct {
	Org      string `json:"org"`
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
	Note     string `json:"note,omitempty"`
	Count    int64  `json:"count,omitempty,string"`
	Secret   string `json:"-"`
}

type thing struct {
	Name string   `json:"name"`
	Tags []string `json:"tags"`
}

type replaceArgs struct {
	ID    int    `json:"id"`
	Thing *thing `json:"thing,omitempty" in:"body"`
}

type patchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// patchArgs send a JSON Patch (RFC 6902) under its own media type.
type patchArgs struct {
	ID  string    `json:"id"`
	Ops []patchOp `json:"ops" in:"body,application/json-patch+json"`
}

// filterArgs send lists as one comma-separated value each.
type filterArgs struct {
	Kinds []string `json:"kinds,omitempty" in:"query,comma"`
	Sizes []int    `json:"size_range" in:"query,comma"`
	Tags  []string `json:"X-Tags,omitempty" in:"header,comma"`
}

type restartArgs struct {
	ID string `json:"id"`
}

type page struct {
	Cursor string `json:"cursor,omitempty" in:"query"`
}

type listArgs struct {
	page        // embedded: its fields are In's
	Org  string `json:"org"`
}

// requestCases are requests built from arguments, and what the upstream
// must receive, exactly: the escaped path and the raw query as sent,
// the headers, the body.
var requestCases = []struct {
	name  string
	route tool.Route
	args  string // the tool's arguments, JSON
	in    any    // the same, as Call's in
	want  seen
}{
	{"plain id", svc("GET", "/things/{id}"), `{"id": "itm-1"}`, getArgs{"itm-1"},
		seen{Method: "GET", URI: "/things/itm-1"}},
	{"space", svc("GET", "/things/{id}"), `{"id": "a b"}`, getArgs{"a b"},
		seen{Method: "GET", URI: "/things/a%20b"}},
	{"unicode", svc("GET", "/things/{id}"), `{"id": "café ü"}`, getArgs{"café ü"},
		seen{Method: "GET", URI: "/things/caf%C3%A9%20%C3%BC"}},
	{"query and fragment characters stay in the segment", svc("GET", "/things/{id}"), `{"id": "x?y=1#z"}`, getArgs{"x?y=1#z"},
		seen{Method: "GET", URI: "/things/x%3Fy=1%23z"}},
	{"percent", svc("GET", "/things/{id}"), `{"id": "50%"}`, getArgs{"50%"},
		seen{Method: "GET", URI: "/things/50%25"}},
	{"named, integer and bool types", svc("GET", "/codes/{code}/{n}/{on}"), `{"code": "a-b", "n": -42, "on": true}`, codeArgs{"a-b", -42, true},
		seen{Method: "GET", URI: "/codes/a-b/-42/true"}},
	{"query: escaping, repeated keys, omitempty, headers", svc("GET", "/orgs/{org}/things"),
		`{"org": "acme", "q": "a b&c=d+e", "tag": ["x", "y z", "ü"], "since": "2026-01-02T03:04:05Z", "exact": true, "min": 1.5, "X-Request-Id": "r-1", "X-Tag": ["p", "q"]}`,
		searchArgs{Org: "acme", Q: "a b&c=d+e", Tags: []string{"x", "y z", "ü"}, Since: ptr(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Exact: true, Min: 1.5, RequestID: "r-1", XTag: []string{"p", "q"}},
		seen{Method: "GET", URI: "/orgs/acme/things?q=a+b%26c%3Dd%2Be&tag=x&tag=y+z&tag=%C3%BC&since=2026-01-02T03%3A04%3A05Z&exact=true&min=1.5",
			Header: http.Header{"X-Request-Id": {"r-1"}, "X-Tag": {"p", "q"}}}},
	{"query: a zero value without omitempty is sent, with it left out", svc("GET", "/orgs/{org}/things"), `{"org": "acme", "q": ""}`, searchArgs{Org: "acme"},
		seen{Method: "GET", URI: "/orgs/acme/things?q="}},
	{"embedded fields", svc("GET", "/orgs/{org}/things"), `{"org": "acme", "cursor": "c/2"}`, listArgs{page: page{Cursor: "c/2"}, Org: "acme"},
		seen{Method: "GET", URI: "/orgs/acme/things?cursor=c%2F2"}},
	{"object body", svc("POST", "/orgs/{org}/things"), `{"org": "acme", "name": "Grinder \"Pro\"", "quantity": 0, "count": "7"}`, createArgs{Org: "acme", Name: `Grinder "Pro"`, Count: 7, Secret: "never sent"},
		seen{Method: "POST", URI: "/orgs/acme/things", Header: http.Header{"Content-Type": {"application/json"}}, Body: `{"name":"Grinder \"Pro\"","quantity":0,"count":"7"}`}},
	{"whole body", svc("PUT", "/things/{id}"), `{"id": 7, "thing": {"name": "x", "tags": ["a"]}}`, &replaceArgs{ID: 7, Thing: &thing{Name: "x", Tags: []string{"a"}}},
		seen{Method: "PUT", URI: "/things/7", Header: http.Header{"Content-Type": {"application/json"}}, Body: `{"name":"x","tags":["a"]}`}},
	{"whole body of a media type of its own", svc("PATCH", "/things/{id}"), `{"id": "t1", "ops": [{"op": "replace", "path": "/name", "value": "y"}]}`, patchArgs{ID: "t1", Ops: []patchOp{{Op: "replace", Path: "/name", Value: "y"}}},
		seen{Method: "PATCH", URI: "/things/t1", Header: http.Header{"Content-Type": {"application/json-patch+json"}}, Body: `[{"op":"replace","path":"/name","value":"y"}]`}},
	{"comma-separated lists", svc("GET", "/things"), `{"kinds": ["a b", "c&d", "é"], "size_range": [1, 20], "X-Tags": ["x", "y"]}`,
		filterArgs{Kinds: []string{"a b", "c&d", "é"}, Sizes: []int{1, 20}, Tags: []string{"x", "y"}},
		seen{Method: "GET", URI: "/things?kinds=a+b%2Cc%26d%2C%C3%A9&size_range=1%2C20", Header: http.Header{"X-Tags": {"x,y"}}}},
	{"empty comma-separated lists are left out", svc("GET", "/things"), `{"size_range": []}`, filterArgs{},
		seen{Method: "GET", URI: "/things"}},
	{"whole body absent", svc("PUT", "/things/{id}"), `{"id": 7}`, replaceArgs{ID: 7},
		seen{Method: "PUT", URI: "/things/7"}},
	{"a POST without body fields sends none", svc("POST", "/things/{id}/restart"), `{"id": "t1"}`, restartArgs{"t1"},
		seen{Method: "POST", URI: "/things/t1/restart"}},
	{"DELETE", svc("DELETE", "/things/{id}"), `{"id": "t1"}`, restartArgs{"t1"},
		seen{Method: "DELETE", URI: "/things/t1"}},
	{"no arguments", svc("GET", "/things"), `{}`, nil,
		seen{Method: "GET", URI: "/things"}},
}

func ptr[T any](v T) *T { return &v }

// withAccept is want with the headers every request carries.
func withAccept(s seen) seen {
	h := http.Header{"Accept": {"application/json"}}
	for k, v := range s.Header {
		h[k] = v
	}
	s.Header = h
	return s
}

// forwardOf returns the Forward handler of the case's In type.
func forwardOf(r tool.Route, in any) tool.Handler[*deps] {
	switch in.(type) {
	case getArgs:
		return upstream.Forward[*deps, getArgs, okResult](r)
	case codeArgs:
		return upstream.Forward[*deps, codeArgs, okResult](r)
	case searchArgs:
		return upstream.Forward[*deps, searchArgs, okResult](r)
	case listArgs:
		return upstream.Forward[*deps, listArgs, okResult](r)
	case createArgs:
		return upstream.Forward[*deps, createArgs, okResult](r)
	case *replaceArgs, replaceArgs:
		return upstream.Forward[*deps, *replaceArgs, okResult](r)
	case patchArgs:
		return upstream.Forward[*deps, patchArgs, okResult](r)
	case filterArgs:
		return upstream.Forward[*deps, filterArgs, okResult](r)
	case restartArgs:
		return upstream.Forward[*deps, restartArgs, okResult](r)
	case nil:
		return upstream.Forward[*deps, struct{}, okResult](r)
	}
	panic("no Forward for this case")
}

// TestForwardRequest: Forward sends exactly the request its arguments
// make, to a real upstream on 127.0.0.1, and answers with its result.
func TestForwardRequest(t *testing.T) {
	for _, tc := range requestCases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, nil)
			d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
			cs := serve(t, d, authz.Caller{Subject: "alice"}, forwarding("fwd", tc.route, forwardOf(tc.route, tc.in)))
			var args map[string]any
			if err := json.Unmarshal([]byte(tc.args), &args); err != nil {
				t.Fatal(err)
			}
			text, isErr, out := callTool(t, cs, "fwd", args)
			if isErr {
				t.Fatalf("error result %q", text)
			}
			if diff := cmp.Diff(map[string]any{"ok": true}, out); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]seen{withAccept(tc.want)}, rec.requests()); diff != "" {
				t.Errorf("the upstream received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCallRequest: Call builds the same requests from the same values
// (a struct, a pointer to one, or nil).
func TestCallRequest(t *testing.T) {
	for _, tc := range requestCases {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t, nil)
			d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
			out, err := upstream.Call[okResult](context.Background(), d, tc.route, tc.in)
			if err != nil || !out.OK {
				t.Fatalf("Call = %+v, %v", out, err)
			}
			if diff := cmp.Diff([]seen{withAccept(tc.want)}, rec.requests()); diff != "" {
				t.Errorf("the upstream received (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPathValuesStayInTheirSegment: a value that could add or climb a
// path segment, as it is, percent-decoded or normalized, is refused
// before anything is sent, naming the argument; Bind's guarantees hold.
func TestPathValuesStayInTheirSegment(t *testing.T) {
	route := svc("GET", "/things/{id}")
	rec := newRecorder(t, nil)
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
	cs := serve(t, d, authz.Caller{Subject: "alice"}, forwarding("fwd", route, upstream.Forward[*deps, getArgs, okResult](route)))
	for _, id := range []string{"", ".", "..", "a/b", "../../admin", `..\admin`, "%2e%2e", "..%2Fadmin", "..%252Fadmin", "..;x", "a\nb", "\u2025", "a\uFF0Fb", "%c0%af"} {
		text, isErr, _ := callTool(t, cs, "fwd", map[string]any{"id": id})
		if !isErr || !strings.HasPrefix(text, `invalid argument "id": `) || strings.Contains(text, "/svc/") {
			t.Errorf("id %q: error %v, text %q; want `invalid argument \"id\": ...` without the route", id, isErr, text)
		}
		_, err := upstream.Call[okResult](context.Background(), d, route, getArgs{ID: id})
		if err == nil || err.Error() != text {
			t.Errorf("id %q: Call's error %v, want the same as Forward's %q", id, err, text)
		}
	}
	if got := rec.requests(); len(got) != 0 {
		t.Errorf("the upstream received %+v, want nothing", got)
	}
}

// TestHeaderValuesHoldNoControlCharacters: a header value with CR, LF or
// another control character is refused before sending, naming it.
func TestHeaderValuesHoldNoControlCharacters(t *testing.T) {
	rec := newRecorder(t, nil)
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
	route := svc("GET", "/orgs/{org}/things")
	for _, v := range []string{"a\r\nX-Injected: 1", "a\x00b", "a\x7fb"} {
		_, err := upstream.Call[okResult](context.Background(), d, route, searchArgs{Org: "acme", RequestID: v})
		want := `invalid argument "X-Request-Id": a header value must not hold control characters`
		if err == nil || err.Error() != want {
			t.Errorf("header %q: error %v, want %q", v, err, want)
		}
	}
	if _, err := upstream.Call[okResult](context.Background(), d, route, searchArgs{Org: "acme", RequestID: "tab\tok"}); err != nil {
		t.Errorf("a tab in a header value: %v", err)
	}
	if got := rec.requests(); len(got) != 1 {
		t.Errorf("the upstream received %d requests, want the one with a tab", len(got))
	}
}

// TestCallPlanErrors: Call reports the mismatches Forward's registration
// refuses, for each call, and sends nothing.
func TestCallPlanErrors(t *testing.T) {
	rec := newRecorder(t, nil)
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
	_, err := upstream.Call[okResult](context.Background(), d, svc("GET", "/things/{id}/{rev}"), getArgs{ID: "x"})
	want := `upstream GET /svc/things/{id}/{rev}: placeholder {rev} has no field in upstream_test.getArgs: add one with json:"rev" (untagged or in:"path")`
	if err == nil || err.Error() != want {
		t.Errorf("Call: %v, want %q", err, want)
	}
	_, err = upstream.Call[okResult](context.Background(), d, svc("GET", "/things/{id}"), nil)
	if want := `upstream GET /svc/things/{id}: placeholder {id} has no field in In: add one with json:"id" (untagged or in:"path")`; err == nil || err.Error() != want {
		t.Errorf("Call without in: %v, want %q", err, want)
	}
	_, err = upstream.Call[okResult](context.Background(), d, svc("GET", "/things"), "not a struct")
	if want := `upstream GET /svc/things: In type string is not a struct: its fields are the request's path, query, headers and body`; err == nil || err.Error() != want {
		t.Errorf("Call with a string: %v, want %q", err, want)
	}
	if got := rec.requests(); len(got) != 0 {
		t.Errorf("the upstream received %+v", got)
	}
	if _, err := upstream.Call[okResult](context.Background(), nil, svc("GET", "/things"), nil); err == nil {
		t.Error("Call with nil Clients: no error")
	}
}

// TestNoUpstream: a container that knows no origin for the route's
// service, or gives one that is not an origin, fails the call with
// "upstream unavailable", the cause (naming the key) logged.
func TestNoUpstream(t *testing.T) {
	for _, tc := range []struct{ origin, cause string }{
		{"", `no origin for the upstream service \"svc\"`},
		{"http://127.0.0.1:1/prefix", `is not an origin`},
		{"ftp://127.0.0.1:1", `is not an origin`},
	} {
		log, buf := logs()
		d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: tc.origin}}, log: log}
		_, err := upstream.Call[okResult](context.Background(), d, svc("GET", "/things"), nil)
		if err == nil || err.Error() != "upstream unavailable" {
			t.Errorf("origin %q: %v, want upstream unavailable", tc.origin, err)
		}
		if !strings.Contains(buf.String(), tc.cause) {
			t.Errorf("origin %q: the log does not say %q:\n%s", tc.origin, tc.cause, buf)
		}
	}
}

// TestOriginWithTrailingSlash: "http://host:port/" is an origin too.
func TestOriginWithTrailingSlash(t *testing.T) {
	rec := newRecorder(t, nil)
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url + "/"}}}
	if _, err := upstream.Call[okResult](context.Background(), d, svc("GET", "/things"), nil); err != nil {
		t.Fatal(err)
	}
	if got := rec.requests(); len(got) != 1 || got[0].URI != "/things" {
		t.Errorf("the upstream received %+v", got)
	}
}

// TestCommaListValues: a value of a comma-separated list that holds a
// comma is refused before sending, naming the argument: the upstream
// would read two values.
func TestCommaListValues(t *testing.T) {
	rec := newRecorder(t, nil)
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
	route := svc("GET", "/things")
	cs := serve(t, d, authz.Caller{Subject: "alice"}, forwarding("fwd", route, upstream.Forward[*deps, filterArgs, okResult](route)))
	for _, tc := range []struct {
		args map[string]any
		in   filterArgs
		want string
	}{
		{map[string]any{"kinds": []any{"a", "b,c"}, "size_range": []any{}}, filterArgs{Kinds: []string{"a", "b,c"}},
			`invalid argument "kinds": the value "b,c" holds a comma, which separates the values of this list`},
		{map[string]any{"size_range": []any{}, "X-Tags": []any{"x,y"}}, filterArgs{Tags: []string{"x,y"}},
			`invalid argument "X-Tags": the value "x,y" holds a comma, which separates the values of this list`},
	} {
		text, isErr, _ := callTool(t, cs, "fwd", tc.args)
		if !isErr || text != tc.want {
			t.Errorf("Forward with %v: error %v %q, want %q", tc.args, isErr, text, tc.want)
		}
		if _, err := upstream.Call[okResult](context.Background(), d, route, tc.in); err == nil || err.Error() != tc.want {
			t.Errorf("Call with %+v: %v, want %q", tc.in, err, tc.want)
		}
	}
	if got := rec.requests(); len(got) != 0 {
		t.Errorf("the upstream received %+v, want nothing", got)
	}
}

// TestTrailingSlash: a route of the service's root ("/svc/", from the
// path "/") and one ending in "/" send exactly that path, through
// authz's upstream transport, whose route check holds them to it.
func TestTrailingSlash(t *testing.T) {
	rec := newRecorder(t, nil)
	client := &http.Client{Transport: authz.Transport(nil, "svc", rec.url, authz.AllowAll(), authz.Options{})}
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url, Client: client}}}
	root, slashed := svc("GET", "/"), svc("GET", "/things/{id}/")
	// A handler of slashed's that sends on the path without the "/".
	unslashed := tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in getArgs) (okResult, error) {
		return upstream.Call[okResult](ctx, d, svc("GET", "/things/{id}"), in)
	})
	cs := serve(t, d, authz.Caller{Subject: "alice"},
		forwarding("root", root, upstream.Forward[*deps, struct{}, okResult](root)),
		forwarding("slashed", slashed, upstream.Forward[*deps, getArgs, okResult](slashed)),
		forwarding("unslashed", slashed, unslashed))
	for _, tc := range []struct {
		tool string
		args map[string]any
		uri  string
	}{
		{"root", map[string]any{}, "/"},
		{"slashed", map[string]any{"id": "a b"}, "/things/a%20b/"},
	} {
		if text, isErr, _ := callTool(t, cs, tc.tool, tc.args); isErr {
			t.Errorf("%s: error result %q", tc.tool, text)
		}
		got := rec.requests()
		if len(got) == 0 || got[len(got)-1].URI != tc.uri {
			t.Errorf("%s: the upstream received %+v, want %s last", tc.tool, got, tc.uri)
		}
	}
	// The transport refuses what the route does not name: the path
	// without its trailing "/".
	n := len(rec.requests())
	if text, isErr, _ := callTool(t, cs, "unslashed", map[string]any{"id": "x"}); !isErr {
		t.Errorf("a request on GET /svc/things/x from a tool of GET %s: %q, want an error", slashed.URI, text)
	}
	if got := rec.requests(); len(got) != n {
		t.Errorf("the upstream received %+v, want nothing more", got[n:])
	}
}
