package authz_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// The bearer of the test callers. Tests check it never shows in a log.
const (
	secretBearer = "s3cr3t-t0ken-must-never-be-logged"
	otherBearer  = "another-secret-bearer-value"
)

// rbacProxy is a real HTTP server speaking the RBAC proxy's auth API,
// deciding from a Policy keyed by bearer → roles. Its answers can be
// switched to a fixed status (an outage) and its policy swapped (a
// revocation).
type rbacProxy struct {
	*httptest.Server
	policy  atomic.Pointer[authz.Policy]
	roles   map[string][]string // bearer → roles
	status  atomic.Int32        // if non-zero, every request answers this
	sstatus atomic.Int32        // if non-zero, single decisions answer this
	single  atomic.Int64        // requests to the single-decision endpoint
	batch   atomic.Int64        // requests to the batch endpoint
	mu      sync.Mutex
	bodies  [][]routeQuery // batch requests received
	headers []http.Header  // single requests received
}

type routeQuery struct {
	Path       string `json:"path"`
	Method     string `json:"method"`
	AuthResult *bool  `json:"authResult,omitempty"`
}

func newRBACProxy(t testing.TB, policy *authz.Policy, roles map[string][]string) *rbacProxy {
	t.Helper()
	p := &rbacProxy{roles: roles}
	p.policy.Store(policy)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/v3/auth", func(w http.ResponseWriter, r *http.Request) {
		p.single.Add(1)
		p.mu.Lock()
		p.headers = append(p.headers, r.Header.Clone())
		p.mu.Unlock()
		if s := max(p.status.Load(), p.sstatus.Load()); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		c, ok := p.caller(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		route := tool.Route{URI: r.Header.Get("X-Forwarded-Uri"), Method: r.Header.Get("X-Forwarded-Method")}
		if p.policy.Load().Allow(r.Context(), c, route) != nil {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /api/v3/auth-routes", func(w http.ResponseWriter, r *http.Request) {
		p.batch.Add(1)
		var q []routeQuery
		if err := json.NewDecoder(r.Body).Decode(&q); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		p.mu.Lock()
		p.bodies = append(p.bodies, q)
		p.mu.Unlock()
		if s := p.status.Load(); s != 0 {
			w.WriteHeader(int(s))
			return
		}
		c, ok := p.caller(r)
		if !ok {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		for i := range q {
			ok := p.policy.Load().Allow(r.Context(), c, tool.Route{URI: q[i].Path, Method: q[i].Method}) == nil
			q[i].AuthResult = &ok
		}
		json.NewEncoder(w).Encode(q)
	})
	p.Server = httptest.NewServer(mux)
	t.Cleanup(p.Close)
	return p
}

func (p *rbacProxy) caller(r *http.Request) (authz.Caller, bool) {
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	roles, known := p.roles[bearer]
	if !ok || !known {
		return authz.Caller{}, false
	}
	return authz.Caller{Subject: "via-proxy", Roles: roles}, true
}

func (p *rbacProxy) auth() *authz.ProxyAuth { return &authz.ProxyAuth{BaseURL: p.URL} }

// upstream is the real HTTP server behind the tools: it counts what it
// receives.
type upstream struct {
	*httptest.Server
	mu       sync.Mutex
	received []string // "METHOD escaped-path"
	bearers  []string
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.received = append(u.received, r.Method+" "+r.URL.EscapedPath())
		u.bearers = append(u.bearers, r.Header.Get("Authorization"))
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"path":%q}`, r.URL.EscapedPath())
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) sends() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.received...)
}

// deps is the test service's dependency container.
type deps struct {
	Client  *http.Client
	BaseURL string // the catalog upstream
}

type idArgs struct {
	ID string `json:"id" jsonschema:"minLength=1"`
}
type noArgs struct{}
type pathOut struct {
	Path string `json:"path"`
}

// send sends one upstream request; the typed handler shows a client an
// authz error's fixed text.
func (d *deps) send(ctx context.Context, method, path string) (pathOut, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.BaseURL+path, nil)
	if err != nil {
		return pathOut{}, err
	}
	resp, err := d.Client.Do(req)
	if err != nil {
		return pathOut{}, err
	}
	defer resp.Body.Close()
	var out pathOut
	err = json.NewDecoder(resp.Body).Decode(&out)
	return out, err
}

func catalog(method, path string) tool.Route { return tool.ServiceRoute("catalog", method, path) }

// newRegistry returns the test service's tools:
//
//	get_item     GET    /catalog/api/v1/items/{id}   (joins the id naively: Transport must hold)
//	list_items   GET    /catalog/api/v1/items
//	create_item  POST   /catalog/api/v1/items
//	delete_item  DELETE /catalog/api/v1/items/{id}
//	report       GET    /catalog/api/v1/items, GET /catalog/api/v1/reports  (two routes: union)
//	sneaky       GET    /catalog/api/v1/items, but sends GET /api/v1/admin   (a configuration bug)
//	about        local
//	unmapped     GET    /catalog/api/v1/items, left out of the Access map
func newRegistry() *registry.Registry[*deps] {
	reg := registry.New[*deps]()
	reg.Register(tool.Tool[*deps]{
		Name: "get_item", Description: "Get an item.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items/{id}")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in idArgs) (pathOut, error) {
			return d.send(ctx, "GET", "/api/v1/items/"+in.ID) // deliberately naive
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "list_items", Description: "List items.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (pathOut, error) {
			return d.send(ctx, "GET", "/api/v1/items")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "create_item", Description: "Create an item.", ServiceKey: "catalog", Behaviour: behaviour.Additive,
		VisibilityRoutes: []tool.Route{catalog("POST", "/api/v1/items")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (pathOut, error) {
			return d.send(ctx, "POST", "/api/v1/items")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "delete_item", Description: "Delete an item.", ServiceKey: "catalog", Behaviour: behaviour.Destructive,
		VisibilityRoutes: []tool.Route{catalog("DELETE", "/api/v1/items/{id}")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in idArgs) (pathOut, error) {
			r, err := catalog("DELETE", "/api/v1/items/{id}").Bind(map[string]string{"id": in.ID})
			if err != nil {
				return pathOut{}, err
			}
			return d.send(ctx, "DELETE", strings.TrimPrefix(r.URI, "/catalog"))
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "report", Description: "Report.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items"), catalog("GET", "/api/v1/reports")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (pathOut, error) {
			return d.send(ctx, "GET", "/api/v1/reports")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "sneaky", Description: "Declares one route, sends another.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (pathOut, error) {
			return d.send(ctx, "GET", "/api/v1/admin")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "about", Description: "About this server.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(context.Context, *deps, *mcp.CallToolRequest, noArgs) (pathOut, error) {
			return pathOut{Path: "local"}, nil
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "unmapped", Description: "Left out of the access map.", ServiceKey: "catalog", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{catalog("GET", "/api/v1/items")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (pathOut, error) {
			return d.send(ctx, "GET", "/api/v1/items")
		}),
	})
	return reg
}

// accessOf returns reg's tools as the server gives them to Middleware,
// leaving out skip.
func accessOf(reg *registry.Registry[*deps], skip ...string) []*tool.Call {
	var m []*tool.Call
	for _, t := range reg.Calls() {
		if !containsStr(skip, t.Tool) {
			m = append(m, t)
		}
	}
	return m
}

// withCall returns ctx carrying c, as a call's context does.
func withCall(ctx context.Context, c *tool.Call) context.Context {
	return call.With(ctx, &call.Tool[tool.Call]{Info: c})
}

func containsStr(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// callerHolder is what the test's caller middleware puts in the context:
// nil means no caller at all.
type callerHolder struct{ p atomic.Pointer[authz.Caller] }

func (h *callerHolder) set(c *authz.Caller) { h.p.Store(c) }

func (h *callerHolder) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if c := h.p.Load(); c != nil {
			ctx = authz.WithCaller(ctx, *c)
		}
		return next(ctx, method, req)
	}
}

// harness is a real MCP client/server pair over in-memory transports: the
// test registry installed on a server guarded by authz, calling a real
// upstream through authz.Transport.
type harness struct {
	caller   *callerHolder
	upstream *upstream
	session  *mcp.ClientSession
	logs     *syncBuffer
}

type harnessOptions struct {
	authorizer      authz.Authorizer // for Middleware and Transport
	skip            []string         // tools left out of the Access map
	pageSize        int
	protocolVersion string
	caller          *authz.Caller
}

func newHarness(t testing.TB, o harnessOptions) *harness {
	t.Helper()
	h := &harness{caller: &callerHolder{}, upstream: newUpstream(t), logs: &syncBuffer{}}
	h.caller.set(o.caller)
	logger := slog.New(slog.NewJSONHandler(h.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := newRegistry()
	d := &deps{
		BaseURL: h.upstream.URL,
		Client:  &http.Client{Transport: authz.Transport(h.upstream.Client().Transport, "catalog", h.upstream.URL, o.authorizer, authz.Options{Logger: logger})},
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0.0.1"}, &mcp.ServerOptions{PageSize: o.pageSize})
	reg.Install(s, d)
	s.AddReceivingMiddleware(h.caller.middleware, authz.Middleware(o.authorizer, accessOf(reg, o.skip...), authz.Options{Logger: logger}))
	h.session = connect(t, s, o.protocolVersion)
	return h
}

func connect(t testing.TB, s *mcp.Server, version string) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, s, &mcptest.Options{Session: &mcp.ClientSessionOptions{ProtocolVersion: version}})
}

// listNames lists every tool (following cursors) and returns the names
// and the cacheScope of each page.
func (h *harness) listNames(t testing.TB) (names, scopes []string, err error) {
	t.Helper()
	cursor := ""
	for {
		res, err := h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return names, scopes, err
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		scopes = append(scopes, res.CacheScope)
		if res.NextCursor == "" {
			return names, scopes, nil
		}
		cursor = res.NextCursor
	}
}

// call calls a tool and returns its text (of the first content), whether
// it is an error result, and the protocol error.
func (h *harness) call(t testing.TB, name string, args map[string]any) (text string, isError bool, err error) {
	t.Helper()
	if args == nil {
		args = map[string]any{}
	}
	res, err := h.session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", false, err
	}
	if len(res.Content) > 0 {
		if tc, ok := res.Content[0].(*mcp.TextContent); ok {
			text = tc.Text
		}
	}
	return text, res.IsError, nil
}

// syncBuffer is a log buffer safe for concurrent writes (log handlers
// write from server goroutines), which also parses its JSON records.
type syncBuffer struct{ syncbuf.Buffer }

// records returns the JSON log records written so far.
func (s *syncBuffer) records(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	dec := json.NewDecoder(strings.NewReader(s.String()))
	for {
		var m map[string]any
		if err := dec.Decode(&m); err == io.EOF {
			return out
		} else if err != nil {
			t.Fatalf("bad log line: %v", err)
		}
		out = append(out, m)
	}
}

// mustPolicy parses a policy or fails the test.
func mustPolicy(t testing.TB, js string) *authz.Policy {
	t.Helper()
	p, err := authz.ParsePolicy([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// testPolicy is testdata/policy.json: roles viewer, editor, reporter and
// nobody over the catalog service.
func testPolicy(t testing.TB) *authz.Policy {
	t.Helper()
	data, err := os.ReadFile("testdata/policy.json")
	if err != nil {
		t.Fatal(err)
	}
	return mustPolicy(t, string(data))
}

// testRoles maps the test bearers to roles, for the RBAC proxy.
var testRoles = map[string][]string{secretBearer: {"viewer"}, otherBearer: {"editor"}}
