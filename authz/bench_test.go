package authz_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/call"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// benchRoutes returns n distinct route templates spread over services of
// 10 routes each, as a registry of n tools would declare them.
func benchRoutes(n int) []tool.Route {
	var rs []tool.Route
	for i := 0; len(rs) < n; i++ {
		svc := fmt.Sprintf("svc%d", i/10)
		res := fmt.Sprintf("/api/v1/res%d", (i%10)/2)
		if i%2 == 0 {
			rs = append(rs, tool.ServiceRoute(svc, "GET", res))
		} else {
			rs = append(rs, tool.ServiceRoute(svc, "GET", res+"/{id}"))
		}
	}
	return rs
}

func benchPolicy(b *testing.B, rps ...authz.RolePolicy) *authz.Policy {
	p, err := authz.NewPolicy(rps)
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// BenchmarkPolicyAllow decides one concrete route against a role of 100
// rules. Goal: < 1 µs.
func BenchmarkPolicyAllow(b *testing.B) {
	ctx := context.Background()
	spread := benchPolicy(b, authz.RolePolicyFor("r", benchRoutes(100)))
	// 100 rules sharing one literal prefix (a placeholder right after the
	// service): the prefix index cannot tell them apart.
	var shared []authz.AccessPolicy
	for i := range 100 {
		shared = append(shared, authz.AccessPolicy{Path: fmt.Sprintf("^/svc/[^/]+/res%d(/[^/]+)?$", i), Methods: []string{"GET"}, Effect: "allow"})
	}
	sharedP := benchPolicy(b, authz.RolePolicy{Role: "r", AccessPolicies: shared})
	// 100 rules that are not templates (a character class in a segment):
	// they run as regexps, found through the literal-prefix index.
	var regs []authz.AccessPolicy
	for i := range 100 {
		regs = append(regs, authz.AccessPolicy{Path: fmt.Sprintf("^/svc%d/api/v1/res%d/[a-z]+-[0-9]+$", i/10, i%10), Methods: []string{"GET"}, Effect: "allow"})
	}
	regexpP := benchPolicy(b, authz.RolePolicy{Role: "r", AccessPolicies: regs})
	c := authz.Caller{Subject: "s", Roles: []string{"r"}}
	for _, bc := range []struct {
		name  string
		p     *authz.Policy
		route tool.Route
		allow bool
	}{
		{"rules=100/spread/allowed", spread, tool.Route{URI: "/svc7/api/v1/res3/item-42", Method: "GET"}, true},
		{"rules=100/spread/denied", spread, tool.Route{URI: "/svc7/api/v1/res3/item-42/x", Method: "GET"}, false},
		{"rules=100/shared-prefix/allowed", sharedP, tool.Route{URI: "/svc/tenant/res73/item-42", Method: "GET"}, true},
		{"rules=100/shared-prefix/denied", sharedP, tool.Route{URI: "/svc/tenant/nope/item-42", Method: "GET"}, false},
		{"rules=100/regexp/allowed", regexpP, tool.Route{URI: "/svc7/api/v1/res3/item-42", Method: "GET"}, true},
		{"rules=100/regexp/denied", regexpP, tool.Route{URI: "/svc7/api/v1/res3/ITEM-42", Method: "GET"}, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			if got := bc.p.Allow(ctx, c, bc.route) == nil; got != bc.allow {
				b.Fatalf("allowed = %v", got)
			}
			b.ReportAllocs()
			for b.Loop() {
				bc.p.Allow(ctx, c, bc.route)
			}
		})
	}
}

// BenchmarkAllowMany decides 1,000 route templates for one caller.
func BenchmarkAllowMany(b *testing.B) {
	ctx := context.Background()
	routes := benchRoutes(1000)
	policy := benchPolicy(b, authz.RolePolicyFor("viewer", routes))
	proxy := newRBACProxy(b, policy, map[string][]string{secretBearer: {"viewer"}})
	c := authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer}
	for _, bc := range []struct {
		name string
		a    authz.Authorizer
	}{
		{"routes=1000/Policy", policy},
		{"routes=1000/Cached(Policy)/warm", authz.Cached(policy, time.Hour, 10_000)},
		{"routes=1000/ProxyAuth", proxy.auth()},
		{"routes=1000/Cached(ProxyAuth)/warm", authz.Cached(proxy.auth(), time.Hour, 10_000)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			got, err := bc.a.AllowMany(ctx, c, routes)
			if err != nil || len(got) != len(routes) || !got[999] {
				b.Fatalf("AllowMany: %v", err)
			}
			b.ReportAllocs()
			for b.Loop() {
				bc.a.AllowMany(ctx, c, routes)
			}
		})
	}
}

// benchRegistry has n mapped tools, one route each, calling the upstream
// through deps.
func benchRegistry(n int) (*registry.Registry[*deps], []tool.Route) {
	reg := registry.New[*deps]()
	var routes []tool.Route
	for i := range n {
		r := catalog("GET", fmt.Sprintf("/api/v1/res%d/{id}", i))
		routes = append(routes, r)
		reg.Register(tool.Tool[*deps]{
			Name:             fmt.Sprintf("get_res%d", i),
			Description:      fmt.Sprintf("Fetch one resource %d by its id.", i),
			ServiceKey:       "catalog",
			VisibilityRoutes: []tool.Route{r},
			Behaviour:        behaviour.ReadOnly,
			Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in idArgs) (pathOut, error) {
				return d.send(ctx, "GET", fmt.Sprintf("/api/v1/res%d/%s", i, url.PathEscape(in.ID)))
			}),
		})
	}
	return reg, routes
}

// benchServer is an in-memory client session to a server with reg
// installed, with authz (Middleware and Transport over a) or without.
func benchServer(b *testing.B, reg *registry.Registry[*deps], up *upstream, a authz.Authorizer) *mcp.ClientSession {
	d := &deps{BaseURL: up.URL, Client: up.Client()}
	s := mcp.NewServer(&mcp.Implementation{Name: "bench", Version: "v1"}, nil)
	if a != nil {
		d.Client = &http.Client{Transport: authz.Transport(up.Client().Transport, "catalog", up.URL, a, authz.Options{})}
		caller := &callerHolder{}
		caller.set(&authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer})
		access := reg.Calls()
		s.AddReceivingMiddleware(caller.middleware, authz.Middleware(a, access, authz.Options{Logger: slog.New(slog.DiscardHandler)}))
	}
	reg.Install(s, d)
	return connect(b, s, "")
}

// BenchmarkToolsList lists 1,000 tools: the raw SDK list, and the list
// filtered for a caller allowed every tool (the most work for the filter)
// with a warm Cached(Policy). Goal: authz ≤ 1.5 × raw.
func BenchmarkToolsList(b *testing.B) {
	ctx := context.Background()
	reg, routes := benchRegistry(1000)
	up := newUpstream(b)
	policy := authz.Cached(benchPolicy(b, authz.RolePolicyFor("viewer", routes)), time.Hour, 10_000)
	list := func(b *testing.B, a authz.Authorizer) func() {
		cs := benchServer(b, reg, up, a)
		res, err := cs.ListTools(ctx, nil)
		if err != nil || len(res.Tools) != 1000 {
			b.Fatalf("tools/list: %v", err)
		}
		return func() {
			if _, err := cs.ListTools(ctx, nil); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("tools=1000/raw", func(b *testing.B) { loop(b, list(b, nil)) })
	b.Run("tools=1000/authz", func(b *testing.B) { loop(b, list(b, policy)) })
	b.Run("tools=1000/paired", func(b *testing.B) { paired(b, list(b, nil), list(b, policy)) })
}

func loop(b *testing.B, f func()) {
	b.ReportAllocs()
	for b.Loop() {
		f()
	}
}

// paired runs raw and authz alternately in one loop and reports their
// times side by side and their ratio, which the load of a shared machine
// affects far less than two separate runs.
func paired(b *testing.B, raw, authz func()) {
	var tr, ta time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if n%2 == 0 {
			raw()
			t1 := time.Now()
			authz()
			tr, ta = tr+t1.Sub(t0), ta+time.Since(t1)
		} else {
			authz()
			t1 := time.Now()
			raw()
			ta, tr = ta+t1.Sub(t0), tr+time.Since(t1)
		}
		n++
	}
	b.ReportMetric(float64(tr.Nanoseconds())/float64(n), "raw-ns/op")
	b.ReportMetric(float64(ta.Nanoseconds())/float64(n), "authz-ns/op")
	b.ReportMetric(float64(ta)/float64(tr), "authz/raw")
}

// BenchmarkToolsCall calls a tool that sends one upstream request (to a
// real HTTP server): raw, and through the call guard and the upstream
// Transport with a warm Cached(Policy). Goal: authz ≤ 1.10 × raw.
func BenchmarkToolsCall(b *testing.B) {
	ctx := context.Background()
	reg, routes := benchRegistry(100)
	up := newUpstream(b)
	policy := authz.Cached(benchPolicy(b, authz.RolePolicyFor("viewer", routes)), time.Hour, 10_000)
	params := &mcp.CallToolParams{Name: "get_res42", Arguments: map[string]any{"id": "item-7"}}
	call := func(b *testing.B, a authz.Authorizer) func() {
		cs := benchServer(b, reg, up, a)
		return func() {
			if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
				b.Fatalf("tools/call: %v %v", err, res)
			}
		}
	}
	b.Run("upstream/raw", func(b *testing.B) { loop(b, call(b, nil)) })
	b.Run("upstream/authz", func(b *testing.B) { loop(b, call(b, policy)) })
	b.Run("upstream/paired", func(b *testing.B) { paired(b, call(b, nil), call(b, policy)) })
}

// BenchmarkOverhead measures what authz adds, alone: the list filter and
// the call guard around a method handler that answers at once, and the
// Transport's check around a base RoundTripper that answers at once (all
// with a warm Cached(Policy)). On a loaded machine these absolute costs
// are steadier than the ratio of two whole MCP round trips.
func BenchmarkOverhead(b *testing.B) {
	ctx := context.Background()
	reg, routes := benchRegistry(1000)
	a := authz.Cached(benchPolicy(b, authz.RolePolicyFor("viewer", routes)), time.Hour, 10_000)
	access := reg.Calls()
	var tools []*mcp.Tool
	for _, t := range reg.All() {
		tools = append(tools, &mcp.Tool{Name: t.Name})
	}
	caller := authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer}
	cctx := authz.WithCaller(ctx, caller)
	mw := authz.Middleware(a, access, authz.Options{Logger: slog.New(slog.DiscardHandler)})

	b.Run("list-filter/tools=1000", func(b *testing.B) {
		next := func(context.Context, string, mcp.Request) (mcp.Result, error) {
			return &mcp.ListToolsResult{Tools: tools}, nil
		}
		h := mw(next)
		req := &mcp.ListToolsRequest{Params: &mcp.ListToolsParams{}}
		res, err := h(cctx, "tools/list", req)
		if err != nil || len(res.(*mcp.ListToolsResult).Tools) != 1000 {
			b.Fatalf("filter: %v", err)
		}
		loop(b, func() { h(cctx, "tools/list", req) })
	})
	b.Run("call-guard", func(b *testing.B) {
		done := &mcp.CallToolResult{}
		h := mw(func(context.Context, string, mcp.Request) (mcp.Result, error) { return done, nil })
		req := &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "get_res42"}}
		if res, err := h(cctx, "tools/call", req); err != nil || res != done {
			b.Fatalf("guard: %v", err)
		}
		loop(b, func() { h(cctx, "tools/call", req) })
	})
	b.Run("transport", func(b *testing.B) {
		resp := &http.Response{StatusCode: 200, Body: http.NoBody}
		base := roundTripFunc(func(*http.Request) (*http.Response, error) { return resp, nil })
		rt := authz.Transport(base, "catalog", "http://catalog.internal", a, authz.Options{})
		tctx := call.With(cctx, &call.Tool[tool.Call]{Info: &tool.Call{Tool: "get_res42", ServiceKey: "catalog", Routes: []tool.Route{routes[42]}}})
		req, _ := http.NewRequestWithContext(tctx, "GET", "http://catalog.internal/api/v1/res42/item-7", nil)
		if _, err := rt.RoundTrip(req); err != nil {
			b.Fatal(err)
		}
		loop(b, func() { rt.RoundTrip(req) })
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
