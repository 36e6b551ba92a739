package server_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// listRegistry returns tools whose definitions exercise the encoding:
// text encoding/json would HTML-escape, non-ASCII text, a tool without a
// title, a HandleResult tool (no output schema), a local tool, and a
// tool the caller may not see.
func listRegistry() *registry.Registry[struct{}] {
	r := registry.New[struct{}]()
	typed := tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in thingArgs) (echoOut, error) {
		return echoOut{Text: in.ID}, nil
	})
	whole := tool.HandleResult(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in echoArgs) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	for i, desc := range []string{
		"Fetch <items> & \"things\" > 0, \u2028 é ✓.",
		"Plain.\n\nSecond paragraph\twith a tab.",
		"Third.",
	} {
		r.Register(tool.Tool[struct{}]{
			Name: fmt.Sprintf("get_%d", i), Title: fmt.Sprintf("Get <%d>", i), Description: desc,
			ServiceKey: "svc", VisibilityRoutes: []tool.Route{tool.ServiceRoute("svc", http.MethodGet, fmt.Sprintf("/a/%d/{id}", i))},
			Behaviour: behaviour.ReadOnly, Handler: typed,
		})
	}
	r.Register(tool.Tool[struct{}]{
		Name: "hidden", Description: "Not for this caller.", ServiceKey: "svc",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("svc", http.MethodDelete, "/a/{id}")},
		Behaviour:        behaviour.Destructive, Handler: typed,
	})
	r.Register(tool.Tool[struct{}]{
		Name: "local_echo", Description: "Echo & more.", Local: true, Behaviour: behaviour.Additive,
		Idempotent: true, OpenWorld: true, Handler: whole,
	})
	return r
}

func listPolicy(t *testing.T) authz.Authorizer {
	t.Helper()
	p, err := authz.NewPolicy([]authz.RolePolicy{{Role: "reader", AccessPolicies: []authz.AccessPolicy{
		{Path: "^/svc/a/", Methods: []string{http.MethodGet}, Effect: "allow"},
	}}})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// referenceList serves r as the server served tools/list before lists
// were encoded from definitions encoded once: a bare go-sdk server with
// the registry installed and authz.Middleware filtering for the caller,
// every definition encoded by the SDK for every list.
func referenceList(t *testing.T, r *registry.Registry[struct{}], a authz.Authorizer, impl *mcp.Implementation, caller authz.Caller) http.Handler {
	s := mcp.NewServer(impl, &mcp.ServerOptions{Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{}}})
	r.Install(s, struct{}{})
	withCaller := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(authz.WithCaller(ctx, caller), method, req)
		}
	}
	s.AddReceivingMiddleware(withCaller, authz.Middleware(a, r.Calls(), authz.Options{}))
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true})
}

// postList posts a tools/list of protocol version to url and returns the
// response body.
func postList(t *testing.T, url, token, version string) []byte {
	t.Helper()
	meta := ""
	if version == "2026-07-28" {
		meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	h := mcptest.Header(auth, version)
	h.Set("Mcp-Method", "tools/list")
	resp := mcptest.Post(t, url, h, `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{`+meta+`}}`)
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("POST tools/list (%s): %v %s: %s", version, err, resp.Status, body)
	}
	return body
}

// TestListEncodedOnce: tools/list answers, byte for byte, what the SDK
// encodes for the filtered page, for every protocol version (2026-07-28
// adds the result type and the server's identity in _meta): the same
// text escaping, schemas, annotations, cacheScope "private" and ttlMs.
func TestListEncodedOnce(t *testing.T) {
	caller := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	a := listPolicy(t)
	opts := server.Options{Authorizer: a, Logger: discardLogger, Name: "list-test", Version: "1.0.0"}
	s, err := server.New(opts, server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"tok": caller})}})
	if err != nil {
		t.Fatal(err)
	}
	tr := httptest.NewServer(hs.Handler())
	defer tr.Close()
	ref := httptest.NewServer(referenceList(t, listRegistry(), a, &mcp.Implementation{Name: "list-test", Version: "1.0.0"}, caller))
	defer ref.Close()

	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"} {
		t.Run(version, func(t *testing.T) {
			// Twice: the first list encodes the definitions, the second
			// reuses them.
			for range 2 {
				got := postList(t, tr.URL+"/mcp", "tok", version)
				want := postList(t, ref.URL, "", version)
				if !bytes.Equal(got, want) {
					t.Fatalf("tools/list differs from the SDK's encoding:\n got %s\nwant %s", got, want)
				}
				for _, part := range []string{`"cacheScope":"private"`, `"ttlMs":0`, `Fetch <items> & \"things\"`, `"local_echo"`} {
					if !bytes.Contains(got, []byte(part)) {
						t.Errorf("tools/list lacks %s: %s", part, got)
					}
				}
				if bytes.Contains(got, []byte(`"hidden"`)) {
					t.Errorf("tools/list shows the hidden tool: %s", got)
				}
			}
		})
	}
}

// TestListMiddlewareReplacesTool: a middleware of Options.Middleware still
// sees the page as an *mcp.ListToolsResult, and a definition it replaces
// is listed as replaced, while the others come from their encoding.
func TestListMiddlewareReplacesTool(t *testing.T) {
	caller := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	retitle := func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if lr, ok := res.(*mcp.ListToolsResult); ok && method == "tools/list" {
				for i, tl := range lr.Tools {
					if tl.Name == "get_1" {
						c := *tl
						c.Title = "Retitled"
						lr.Tools[i] = &c
					}
				}
			}
			return res, err
		}
	}
	s, err := server.New(server.Options{Authorizer: listPolicy(t), Logger: discardLogger, Caller: &caller, Middleware: []mcp.Middleware{retitle}},
		server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	cs := connectMemAs(t, s, caller)
	for range 2 {
		res, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		titles := map[string]string{}
		for _, tl := range res.Tools {
			titles[tl.Name] = tl.Title
		}
		if titles["get_1"] != "Retitled" || titles["get_0"] != "Get <0>" || len(titles) != 4 {
			t.Fatalf("titles = %v, want get_1 retitled, get_0 as declared, 4 tools", titles)
		}
	}
}

// TestListTTL: Options.ListTTL is every tools/list page's ttlMs, on
// every protocol version, the page still private to the caller; a
// negative one is refused.
func TestListTTL(t *testing.T) {
	caller := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	s, err := server.New(server.Options{Authorizer: listPolicy(t), Logger: discardLogger, ListTTL: 90 * time.Second}, server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"tok": caller})}})
	if err != nil {
		t.Fatal(err)
	}
	tr := httptest.NewServer(hs.Handler())
	defer tr.Close()
	for _, version := range []string{"2026-07-28", "2025-11-25", "2025-03-26"} {
		got := postList(t, tr.URL+"/mcp", "tok", version)
		for _, part := range []string{`"ttlMs":90000`, `"cacheScope":"private"`} {
			if !bytes.Contains(got, []byte(part)) {
				t.Errorf("%s: tools/list lacks %s: %s", version, part, got)
			}
		}
	}
	if _, err := server.New(server.Options{Authorizer: listPolicy(t), ListTTL: -time.Second}, server.Install(listRegistry(), struct{}{})); err == nil || !strings.Contains(err.Error(), "Options.ListTTL") {
		t.Errorf("New with a negative ListTTL = %v, want an error naming it", err)
	}
}
