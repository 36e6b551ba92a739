package devproxy_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/devproxy"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/tool"
)

func route(method, uri string) tool.Route { return tool.Route{URI: uri, Method: method} }

// TestAllow: the single-decision endpoint allows what the caller's roles
// allow and denies the rest, as ProxyAuth reads its answers.
func TestAllow(t *testing.T) {
	p := start(t, devproxy.Options{})
	pa := p.client()
	ctx := context.Background()
	tests := []struct {
		token string
		route tool.Route
		allow bool
	}{
		{"demo-viewer", route("GET", "/catalog/api/v1/items/42"), true},
		{"demo-viewer", route("GET", "/catalog/api/v1/items"), true},
		{"demo-viewer", route("DELETE", "/catalog/api/v1/items/42"), false},
		{"demo-viewer", route("GET", "/billing/api/v1/invoices"), false},
		{"demo-editor", route("PUT", "/catalog/api/v1/items/42"), true},
		{"demo-editor", route("DELETE", "/catalog/api/v1/items/42"), false},
		{"demo-admin", route("DELETE", "/catalog/api/v1/items/42"), true},
		{"demo-admin", route("DELETE", "/catalog/api/v1/items/locked"), false}, // deny overrides allow
		{"nobody-token", route("GET", "/catalog/api/v1/items"), false},
	}
	for _, tt := range tests {
		err := pa.Allow(ctx, authz.Caller{Subject: "s", Bearer: tt.token}, tt.route)
		var denied *authz.DeniedError
		switch {
		case tt.allow && err != nil:
			t.Errorf("%s %s: %v, want allowed", tt.token, tt.route, err)
		case !tt.allow && !errors.As(err, &denied):
			t.Errorf("%s %s: %v, want a *DeniedError", tt.token, tt.route, err)
		}
	}
	// The wire: 204 and 403.
	for token, want := range map[string]int{"demo-admin": http.StatusNoContent, "demo-viewer": http.StatusForbidden} {
		got := post(t, p.url+"/api/v3/auth", bearer(token, "X-Forwarded-Uri", "/catalog/api/v1/items/7", "X-Forwarded-Method", "DELETE"), "")
		if got.status != want {
			t.Errorf("%s DELETE: HTTP %d %q, want %d", token, got.status, got.body, want)
		}
	}
	if s := p.log.String(); !strings.Contains(s, `subject=admin@demo route="DELETE /catalog/api/v1/items/locked" allowed=false`) {
		t.Errorf("the decision is not logged:\n%s", s)
	}
}

// TestAllowConcretePath: the single decision is made for the concrete
// X-Forwarded-Uri, its query removed: "numbers" may read items whose id
// is a number only.
func TestAllowConcretePath(t *testing.T) {
	pa := start(t, devproxy.Options{}).client()
	c := authz.Caller{Subject: "s", Bearer: "num-token"}
	for uri, allow := range map[string]bool{
		"/catalog/api/v1/items/42":          true,
		"/catalog/api/v1/items/42?expand=1": true,
		"/catalog/api/v1/items/abc":         false,
		"/catalog/api/v1/items/{id}":        false,
		"/catalog/api/v1/items/42/x":        false,
	} {
		err := pa.Allow(context.Background(), c, route("GET", uri))
		var denied *authz.DeniedError
		if allow && err != nil || !allow && !errors.As(err, &denied) {
			t.Errorf("GET %s: %v, want allowed %v", uri, err, allow)
		}
	}
}

// TestAllowMany: the batch endpoint decides every route, as ProxyAuth
// reads its answer.
func TestAllowMany(t *testing.T) {
	pa := start(t, devproxy.Options{}).client()
	rs := []tool.Route{
		route("GET", "/catalog/api/v1/items/{id}"),
		route("DELETE", "/catalog/api/v1/items/{id}"),
		route("GET", "/catalog/api/v1/items"),
		route("POST", "/catalog/api/v1/items"),
	}
	for token, want := range map[string][]bool{
		"demo-viewer": {true, false, true, false},
		"demo-editor": {true, false, true, true},
		"demo-admin":  {true, true, true, true},
		"num-token":   {false, false, false, false}, // "{id}" is not a number
	} {
		got, err := pa.AllowMany(context.Background(), authz.Caller{Subject: "s", Bearer: token}, rs)
		if err != nil {
			t.Errorf("%s: %v", token, err)
			continue
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", token, diff)
		}
	}
}

// TestAllowManyWire: the batch answer names each route asked, in the
// order asked, a duplicate answered again; a batch whose every route is
// denied is 403; an empty one is 200 [].
func TestAllowManyWire(t *testing.T) {
	p := start(t, devproxy.Options{})
	type answer struct {
		Path       string `json:"path"`
		Method     string `json:"method"`
		AuthResult *bool  `json:"authResult"`
	}
	yes, no := true, false
	got := post(t, p.url+"/api/v3/auth-routes", bearer("demo-viewer", "Content-Type", "application/json"), `[
		{"path": "/catalog/api/v1/items/{id}", "method": "DELETE"},
		{"path": "/catalog/api/v1/items/{id}", "method": "GET"},
		{"path": "/catalog/api/v1/items/{id}", "method": "DELETE"}
	]`)
	if got.status != http.StatusOK || got.header.Get("Content-Type") != "application/json" {
		t.Fatalf("HTTP %d %s %q", got.status, got.header.Get("Content-Type"), got.body)
	}
	var answers []answer
	if err := json.Unmarshal([]byte(got.body), &answers); err != nil {
		t.Fatalf("%v: %s", err, got.body)
	}
	want := []answer{
		{"/catalog/api/v1/items/{id}", "DELETE", &no},
		{"/catalog/api/v1/items/{id}", "GET", &yes},
		{"/catalog/api/v1/items/{id}", "DELETE", &no},
	}
	if diff := cmp.Diff(want, answers); diff != "" {
		t.Errorf("answer (-want +got):\n%s", diff)
	}
	if s := p.log.String(); !strings.Contains(s, "subject=viewer@demo routes=3 distinct=2 allowed=1") {
		t.Errorf("the batch is not logged:\n%s", s)
	}

	got = post(t, p.url+"/api/v3/auth-routes", bearer("demo-viewer"), `[{"path": "/catalog/api/v1/items/{id}", "method": "DELETE"}, {"path": "/catalog/api/v1/items", "method": "POST"}]`)
	if got.status != http.StatusForbidden {
		t.Errorf("every route denied: HTTP %d %q, want 403", got.status, got.body)
	}
	got = post(t, p.url+"/api/v3/auth-routes", bearer("nobody-token"), `[{"path": "/catalog/api/v1/items", "method": "GET"}]`)
	if got.status != http.StatusForbidden {
		t.Errorf("a caller without roles: HTTP %d %q, want 403", got.status, got.body)
	}
	got = post(t, p.url+"/api/v3/auth-routes", bearer("nobody-token"), `[]`)
	if got.status != http.StatusOK || strings.TrimSpace(got.body) != "[]" {
		t.Errorf("empty batch: HTTP %d %q, want 200 []", got.status, got.body)
	}

	// Through the client: 403 reads as every route denied, and the
	// duplicates the client asks once come back to their places.
	pa := p.client()
	viewer := authz.Caller{Subject: "s", Bearer: "demo-viewer"}
	denied, err := pa.AllowMany(context.Background(), viewer, []tool.Route{route("DELETE", "/catalog/api/v1/items/{id}"), route("PUT", "/catalog/api/v1/items/{id}")})
	if err != nil || !cmp.Equal(denied, []bool{false, false}) {
		t.Errorf("every route denied: %v, %v", denied, err)
	}
	dup, err := pa.AllowMany(context.Background(), viewer, []tool.Route{
		route("GET", "/catalog/api/v1/items"), route("DELETE", "/catalog/api/v1/items/{id}"),
		route("GET", "/catalog/api/v1/items"), route("DELETE", "/catalog/api/v1/items/{id}"),
	})
	if err != nil || !cmp.Equal(dup, []bool{true, false, true, false}) {
		t.Errorf("duplicates: %v, %v", dup, err)
	}
}

// TestUnauthenticated: a request without a bearer or with one the file
// does not hold is 401 with a Bearer challenge, on both endpoints, and
// ProxyAuth reads it as unauthenticated.
func TestUnauthenticated(t *testing.T) {
	p := start(t, devproxy.Options{})
	pa := p.client()
	var unauth *authz.UnauthenticatedError
	stranger := authz.Caller{Subject: "s", Bearer: "guessed-token"}
	if err := pa.Allow(context.Background(), stranger, route("GET", "/catalog/api/v1/items")); !errors.As(err, &unauth) {
		t.Errorf("Allow with an unknown token: %v, want *UnauthenticatedError", err)
	}
	if got, err := pa.AllowMany(context.Background(), stranger, []tool.Route{route("GET", "/catalog/api/v1/items")}); !errors.As(err, &unauth) {
		t.Errorf("AllowMany with an unknown token: %v, %v, want *UnauthenticatedError", got, err)
	}
	headers := func(h map[string][]string) map[string][]string {
		h["X-Forwarded-Uri"] = []string{"/catalog/api/v1/items"}
		h["X-Forwarded-Method"] = []string{"GET"}
		return h
	}
	for _, tt := range []struct {
		name      string
		headers   map[string][]string
		challenge string
	}{
		{"no header", headers(map[string][]string{}), `Bearer realm="dev-proxy"`},
		{"basic", headers(map[string][]string{"Authorization": {"Basic ZGVtby1hZG1pbjp4"}}), `Bearer realm="dev-proxy"`},
		{"empty bearer", headers(map[string][]string{"Authorization": {"Bearer "}}), `Bearer realm="dev-proxy"`},
		{"unknown", headers(bearer("guessed-token")), `Bearer realm="dev-proxy", error="invalid_token"`},
		{"a known token's prefix", headers(bearer("demo-admi")), `Bearer realm="dev-proxy", error="invalid_token"`},
	} {
		for _, path := range []string{"/api/v3/auth", "/api/v3/auth-routes"} {
			got := post(t, p.url+path, tt.headers, `[{"path": "/catalog/api/v1/items", "method": "GET"}]`)
			if got.status != http.StatusUnauthorized || got.header.Get("WWW-Authenticate") != tt.challenge {
				t.Errorf("%s %s: HTTP %d, WWW-Authenticate %q, want 401 with %q", tt.name, path, got.status, got.header.Get("WWW-Authenticate"), tt.challenge)
			}
		}
	}
	// The bearer scheme is case-insensitive, as in the server.
	if got := post(t, p.url+"/api/v3/auth", headers(map[string][]string{"Authorization": {"bearer demo-admin"}}), ""); got.status != http.StatusNoContent {
		t.Errorf("lower-case scheme: HTTP %d %q", got.status, got.body)
	}
	if s := p.log.String(); !strings.Contains(s, `reason="unknown bearer token: it is not in the tokens file"`) {
		t.Errorf("an unknown token is not logged:\n%s", s)
	}
}

// TestReady: ProxyAuth's readiness probe finds the dev proxy ready (it
// refuses a request without a credential).
func TestReady(t *testing.T) {
	if err := start(t, devproxy.Options{}).client().Ready(context.Background()); err != nil {
		t.Errorf("Ready: %v", err)
	}
}

// TestBadRequests: malformed requests get 400 (or 405, 404) with a
// message naming the problem, and no decision.
func TestBadRequests(t *testing.T) {
	p := start(t, devproxy.Options{})
	single := func(more ...string) map[string][]string { return bearer("demo-admin", more...) }
	uri, method := "X-Forwarded-Uri", "X-Forwarded-Method"
	tests := []struct {
		name    string
		path    string
		headers map[string][]string
		body    string
		status  int
		want    string
	}{
		{"two Authorization headers", "/api/v3/auth", map[string][]string{"Authorization": {"Bearer demo-admin", "Bearer demo-viewer"}, uri: {"/catalog/api/v1/items"}, method: {"GET"}}, "", 400, "more than one Authorization header"},
		{"no uri", "/api/v3/auth", single(method, "GET"), "", 400, "no X-Forwarded-Uri header: want the request's path"},
		{"two uris", "/api/v3/auth", single(uri, "/catalog/api/v1/items", uri, "/admin", method, "GET"), "", 400, "more than one X-Forwarded-Uri header"},
		{"no method", "/api/v3/auth", single(uri, "/catalog/api/v1/items"), "", 400, "no X-Forwarded-Method header"},
		{"two methods", "/api/v3/auth", single(uri, "/catalog/api/v1/items", method, "GET", method, "DELETE"), "", 400, "more than one X-Forwarded-Method header"},
		{"lower-case method", "/api/v3/auth", single(uri, "/catalog/api/v1/items", method, "get"), "", 400, `X-Forwarded-Method "get" is not an upper-case HTTP method: want one of GET, HEAD, POST, PUT, PATCH, DELETE, OPTIONS, CONNECT, TRACE`},
		{"relative uri", "/api/v3/auth", single(uri, "catalog/api/v1/items", method, "GET"), "", 400, `X-Forwarded-Uri "catalog/api/v1/items" does not begin with "/"`},
		{"absolute uri", "/api/v3/auth", single(uri, "http://catalog/api/v1/items", method, "GET"), "", 400, `does not begin with "/"`},
		{"empty uri", "/api/v3/auth", single(uri, "", method, "GET"), "", 400, "X-Forwarded-Uri is empty"},
		{"fragment", "/api/v3/auth", single(uri, "/catalog/api/v1/items#x", method, "GET"), "", 400, "holds a fragment"},
		{"dot dot", "/api/v3/auth", single(uri, "/catalog/api/v1/items/..", method, "GET"), "", 400, `X-Forwarded-Uri "/catalog/api/v1/items/.." holds a dot segment ("..")`},
		{"dot", "/api/v3/auth", single(uri, "/catalog/api/v1/items/.", method, "GET"), "", 400, "holds a dot segment"},
		{"escaped dot dot", "/api/v3/auth", single(uri, "/catalog/api/v1/items/%2e%2E", method, "GET"), "", 400, "holds a dot segment"},
		{"double-escaped dot dot", "/api/v3/auth", single(uri, "/catalog/api/v1/items/%252e%252e", method, "GET"), "", 400, "holds a dot segment"},
		{"dot dot in the middle", "/api/v3/auth", single(uri, "/catalog/api/v1/items/../../admin/x", method, "GET"), "", 400, "holds a dot segment"},

		{"not JSON", "/api/v3/auth-routes", single(), `GET /catalog`, 400, `invalid JSON at offset 1: invalid character 'G' looking for beginning of value: want a JSON array of {"path", "method"}`},
		{"empty body", "/api/v3/auth-routes", single(), ``, 400, `the body ends early: want a JSON array`},
		{"object", "/api/v3/auth-routes", single(), `{"path": "/catalog/api/v1/items", "method": "GET"}`, 400, `the body is not an array: want a JSON array of {"path", "method"}`},
		{"null", "/api/v3/auth-routes", single(), `null`, 400, `the body is not an array`},
		{"truncated", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "GET"}, {"path": "/cat`, 400, "the body ends early"},
		{"unclosed", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "GET"}`, 400, "the body ends early"},
		{"element not an object", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "GET"}, "GET /x"]`, 400, `routes[1]: want an object {"path", "method"}, got a JSON string`},
		{"path not a string", "/api/v3/auth-routes", single(), `[{"path": 7, "method": "GET"}]`, 400, `routes[0].path: want a string, got a JSON number`},
		{"unknown field", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "GET", "uri": "/x"}]`, 400, `routes[0]: unknown field "uri"`},
		{"missing path", "/api/v3/auth-routes", single(), `[{"method": "GET"}]`, 400, "routes[0].path is empty"},
		{"missing method", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items"}]`, 400, "routes[0].method is missing: want an upper-case HTTP method"},
		{"bad method", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "FETCH"}]`, 400, `routes[0].method "FETCH" is not an upper-case HTTP method`},
		{"query", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items?limit=1", "method": "GET"}]`, 400, `routes[0].path "/catalog/api/v1/items?limit=1" holds a query`},
		{"space", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items /x", "method": "GET"}]`, 400, "holds white space or a control character"},
		{"batch dot dot", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items/..", "method": "GET"}]`, 400, `routes[0].path "/catalog/api/v1/items/.." holds a dot segment`},
		{"trailing data", "/api/v3/auth-routes", single(), `[{"path": "/catalog/api/v1/items", "method": "GET"}] [{"path": "/admin", "method": "GET"}]`, 400, "data after the array"},
		{"trailing garbage", "/api/v3/auth-routes", single(), `[] x`, 400, "data after the array"},

		{"GET", "/api/v3/auth", nil, "", 405, "method GET not allowed: the auth API takes POST"},
		{"unknown path", "/api/v3/authz", single(), "", 404, "404 page not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got response
			if tt.name == "GET" {
				resp, err := http.Get(p.url + tt.path)
				if err != nil {
					t.Fatal(err)
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				got = response{resp.StatusCode, resp.Header, string(body)}
				if a := got.header.Get("Allow"); a != "POST" {
					t.Errorf("Allow: %q, want POST", a)
				}
			} else {
				got = post(t, p.url+tt.path, tt.headers, tt.body)
			}
			if got.status != tt.status || !strings.Contains(got.body, tt.want) {
				t.Errorf("HTTP %d %q, want %d with %q", got.status, got.body, tt.status, tt.want)
			}
		})
	}
	if s := p.log.String(); strings.Contains(s, "decision") {
		t.Errorf("a malformed request was decided:\n%s", s)
	}
	// ProxyAuth reads a 400 as an outage: never as allowed.
	var outage *authz.OutageError
	if err := p.client().Allow(context.Background(), authz.Caller{Subject: "s", Bearer: "demo-admin"}, route("GET", "/catalog/api/v1/items/..")); !errors.As(err, &outage) {
		t.Errorf("Allow of a dot segment: %v, want *OutageError", err)
	}
}

// TestBatchBound: a batch may ask about MaxRoutes routes and no more
// (413), by default 10 000.
func TestBatchBound(t *testing.T) {
	bulk := authz.Caller{Subject: "s", Bearer: "bulk-token"}
	routes := func(n int) []tool.Route {
		rs := make([]tool.Route, n)
		for i := range rs {
			rs[i] = route("GET", fmt.Sprintf("/r/%d", i))
		}
		return rs
	}
	pa := start(t, devproxy.Options{}).client()
	got, err := pa.AllowMany(context.Background(), bulk, routes(devproxy.DefaultMaxRoutes))
	if err != nil || len(got) != devproxy.DefaultMaxRoutes || !got[0] || !got[len(got)-1] {
		t.Errorf("AllowMany of %d routes: %d answers, %v", devproxy.DefaultMaxRoutes, len(got), err)
	}
	var outage *authz.OutageError
	if _, err := pa.AllowMany(context.Background(), bulk, routes(devproxy.DefaultMaxRoutes+1)); !errors.As(err, &outage) || !strings.Contains(outage.Err.Error(), "413") {
		t.Errorf("AllowMany of %d routes: %v, want an outage (413)", devproxy.DefaultMaxRoutes+1, err)
	}

	p := start(t, devproxy.Options{MaxRoutes: 2})
	// Duplicates count: they cost decoding all the same.
	body := `[{"path": "/r/1", "method": "GET"}, {"path": "/r/1", "method": "GET"}, {"path": "/r/1", "method": "GET"}]`
	if got := post(t, p.url+"/api/v3/auth-routes", bearer("bulk-token"), body); got.status != http.StatusRequestEntityTooLarge || !strings.Contains(got.body, "more than 2 routes in one batch") {
		t.Errorf("3 routes, MaxRoutes 2: HTTP %d %q", got.status, got.body)
	}
	if got, err := p.client().AllowMany(context.Background(), bulk, routes(2)); err != nil || !cmp.Equal(got, []bool{true, true}) {
		t.Errorf("2 routes, MaxRoutes 2: %v, %v", got, err)
	}
}

// TestBodyBound: a batch body over MaxBodyBytes is 413 once that many
// bytes have arrived, whether it declares a gigabyte or no length at
// all; what the server allocates meanwhile follows what arrived.
func TestBodyBound(t *testing.T) {
	p := start(t, devproxy.Options{})
	host := strings.TrimPrefix(p.url, "http://")
	for _, tt := range []struct {
		name, framing string
		chunked       bool
	}{
		{"declared 1 GiB", "Content-Length: 1073741824\r\n", false},
		{"chunked", "Transfer-Encoding: chunked\r\n", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			status, body := flood(t, host, tt.framing, tt.chunked)
			runtime.ReadMemStats(&after)
			if status != http.StatusRequestEntityTooLarge || !strings.Contains(body, fmt.Sprintf("exceeds %d bytes", devproxy.DefaultMaxBodyBytes)) {
				t.Errorf("HTTP %d %q, want 413", status, body)
			}
			// The decoder buffers at most the 1 MiB bound, doubling as it
			// grows; a handler sized by the declared length, or reading
			// the 16 MiB sent, allocates far more.
			if got := after.TotalAlloc - before.TotalAlloc; got > 12<<20 {
				t.Errorf("the process allocated %d bytes while refusing the body, want at most %d", got, 12<<20)
			}
		})
	}
}

// flood sends, over one connection to host, a batch request with framing
// whose body is one endless JSON string (up to 16 MiB, then the write
// side is closed), and returns the answer's status and body.
func flood(t *testing.T, host, framing string, chunked bool) (int, string) {
	t.Helper()
	conn, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/v3/auth-routes HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer bulk-token\r\nContent-Type: application/json\r\n%s\r\n", host, framing)
	// The chunks are made once: what the test allocates is not the
	// server's doing.
	first := []byte(`[{"path": "/` + strings.Repeat("a", 64<<10-12))
	rest := bytes.Repeat([]byte("a"), len(first))
	if chunked {
		frame := func(b []byte) []byte { return append(fmt.Appendf(nil, "%x\r\n", len(b)), append(b, "\r\n"...)...) }
		first, rest = frame(first), frame(rest)
	}
	go func() {
		chunk := first
		for range 16 << 20 / len(chunk) {
			if _, err := conn.Write(chunk); err != nil {
				return // the server answered and closed
			}
			chunk = rest
		}
		conn.(*net.TCPConn).CloseWrite()
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return resp.StatusCode, string(data)
}

// TestPaths: the endpoints' paths are configurable, as ProxyAuth's.
func TestPaths(t *testing.T) {
	p := start(t, devproxy.Options{AuthPath: "/rbac/auth", RoutesPath: "/rbac/routes"})
	pa := &authz.ProxyAuth{BaseURL: p.url, AuthPath: "/rbac/auth", RoutesPath: "/rbac/routes"}
	admin := authz.Caller{Subject: "s", Bearer: "demo-admin"}
	if err := pa.Allow(context.Background(), admin, route("DELETE", "/catalog/api/v1/items/1")); err != nil {
		t.Errorf("Allow: %v", err)
	}
	if got, err := pa.AllowMany(context.Background(), admin, []tool.Route{route("GET", "/catalog/api/v1/items")}); err != nil || !cmp.Equal(got, []bool{true}) {
		t.Errorf("AllowMany: %v, %v", got, err)
	}
	if err := pa.Ready(context.Background()); err != nil {
		t.Errorf("Ready: %v", err)
	}
	if got := post(t, p.url+"/api/v3/auth", bearer("demo-admin"), ""); got.status != http.StatusNotFound {
		t.Errorf("the default path with AuthPath set: HTTP %d", got.status)
	}
}

// TestNew: New refuses what it cannot serve, naming the problem and
// never a token.
func TestNew(t *testing.T) {
	policy := authz.MustParsePolicy([]byte(policyJSON))
	ok := []tokenfile.Entry{{Token: "t-1", Subject: "a", Roles: []string{"viewer"}}}
	for _, tt := range []struct {
		policy *authz.Policy
		tokens []tokenfile.Entry
		opts   devproxy.Options
		want   string
	}{
		{nil, ok, devproxy.Options{}, "devproxy: New: nil policy"},
		{authz.MustParsePolicy([]byte(`[]`)), ok, devproxy.Options{}, `the policy has no role "viewer" (it has none)`},
		{policy, []tokenfile.Entry{{Token: "sekrit-1", Subject: "a", Roles: []string{"root"}}}, devproxy.Options{}, `devproxy: New: tokenfile: entry 0 (subject "a"): the policy has no role "root"`},
		{policy, []tokenfile.Entry{{Token: "sekrit-1", Subject: "a"}, {Token: "sekrit-1", Subject: "b"}}, devproxy.Options{}, "entry 1: duplicate token"},
		{policy, ok, devproxy.Options{AuthPath: "auth"}, `devproxy: Options.AuthPath "auth" must begin with "/"`},
		{policy, ok, devproxy.Options{RoutesPath: "routes"}, `Options.RoutesPath "routes" must begin with "/"`},
		{policy, ok, devproxy.Options{RoutesPath: devproxy.DefaultAuthPath}, `are both "/api/v3/auth"`},
		{policy, ok, devproxy.Options{MaxRoutes: -1}, "Options.MaxRoutes is -1: want 0 (the default, 10000) or a positive number"},
		{policy, ok, devproxy.Options{MaxBodyBytes: -1}, "Options.MaxBodyBytes is -1"},
	} {
		_, err := devproxy.New(tt.policy, tt.tokens, tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New(%v, %+v): %v, want %q", tt.tokens, tt.opts, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "sekrit") {
			t.Errorf("the error quotes a token: %v", err)
		}
	}
}
