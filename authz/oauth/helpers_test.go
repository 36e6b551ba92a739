package oauth_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// The resource identifiers of the tests: this MCP server's, and its
// upstream's.
const (
	resource         = "https://tools.example.test/mcp"
	upstreamAudience = "https://items.example.test"
	serverSecret     = "toolroute-secret"
)

// clients are the provider's clients: users by role, and this server's
// own client ("toolroute": introspection and token exchange).
func clients() []oidctest.Client {
	aud := []string{resource}
	return []oidctest.Client{
		{ID: "alice", Secret: "alice-secret", Audience: aud, Claims: map[string]any{"roles": []string{"viewer"}}},
		{ID: "bob", Secret: "bob-secret", Audience: aud, Claims: map[string]any{"roles": []string{"editor"}}},
		{ID: "carol", Secret: "carol-secret", Audience: aud, Claims: map[string]any{"roles": []string{"admin"}}},
		{ID: "dave", Secret: "dave-secret", Audience: aud},
		{ID: "erin", Secret: "erin-secret", Audience: aud, Claims: map[string]any{"realm_access": map[string]any{"roles": []string{"editor"}}}},
		{ID: "frank", Secret: "frank-secret", Audience: aud, Claims: map[string]any{"groups": []string{"admin"}}},
		{ID: "mallory", Secret: "mallory-secret", Audience: []string{"https://other.example.test"}, Claims: map[string]any{"roles": []string{"admin"}}},
		{ID: "late", Secret: "late-secret", Audience: aud, Lifetime: -2 * time.Minute, Claims: map[string]any{"roles": []string{"admin"}}},
		{ID: "early", Secret: "early-secret", Audience: aud, NotBefore: 10 * time.Minute, Claims: map[string]any{"roles": []string{"admin"}}},
		{ID: "olivia", Secret: "olivia-secret", Audience: aud, Opaque: true, Claims: map[string]any{"roles": []string{"editor"}}},
		{ID: "toolroute", Secret: serverSecret, Exchange: true},
	}
}

// startOP starts the provider with clients().
func startOP(t testing.TB) *oidctest.Provider {
	t.Helper()
	return oidctest.Start(t, clients()...)
}

func newJWTVerifier(t testing.TB, op *oidctest.Provider, opts oauth.JWTOptions) *oauth.JWTVerifier {
	t.Helper()
	opts.Issuer = op.Issuer
	if opts.Audience == "" {
		opts.Audience = resource
	}
	v, err := oauth.NewJWTVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// policy gives viewers GET, editors GET and POST, admins DELETE too.
func policy(t testing.TB) *authz.Policy {
	p, err := authz.ParsePolicy([]byte(`[
		{"role": "viewer", "accessPolicies": [{"path": "^/items/", "methods": ["GET"], "effect": "allow"}]},
		{"role": "editor", "accessPolicies": [{"path": "^/items/", "methods": ["GET", "POST"], "effect": "allow"}]},
		{"role": "admin", "accessPolicies": [{"path": "^/items/", "methods": ["GET", "POST", "DELETE"], "effect": "allow"}]}
	]`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// deps is the test tools' container: a client of the "items" upstream.
type deps struct {
	base   string
	client *http.Client
}

type idArgs struct {
	ID string `json:"id,omitempty" jsonschema:"description=an item's id"`
}

type upstreamOut struct {
	Status  int    `json:"status"`
	Subject string `json:"subject"`
}

type whoamiOut struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles"`
}

// call sends method path upstream and reports what the upstream said.
func (d *deps) call(ctx context.Context, method, path string) (upstreamOut, error) {
	req, err := http.NewRequestWithContext(ctx, method, d.base+path, nil)
	if err != nil {
		return upstreamOut{}, err
	}
	resp, err := d.client.Do(req)
	if err != nil {
		return upstreamOut{}, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return upstreamOut{Status: resp.StatusCode, Subject: string(body)}, nil
}

// testRegistry has a tool per method on the items service and a local
// whoami.
func testRegistry() *registry.Registry[*deps] {
	reg := registry.New[*deps]()
	reg.Register(tool.Tool[*deps]{
		Name: "list_items", Description: "List the items.", ServiceKey: "items", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("items", http.MethodGet, "/list")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ idArgs) (upstreamOut, error) {
			return d.call(ctx, http.MethodGet, "/list")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "add_item", Description: "Add an item.", ServiceKey: "items", Behaviour: behaviour.Additive,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("items", http.MethodPost, "/list")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ idArgs) (upstreamOut, error) {
			return d.call(ctx, http.MethodPost, "/list")
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "delete_item", Description: "Delete an item.", ServiceKey: "items", Behaviour: behaviour.Destructive,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("items", http.MethodDelete, "/list/{id}")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in idArgs) (upstreamOut, error) {
			return d.call(ctx, http.MethodDelete, "/list/"+in.ID)
		}),
	})
	reg.Register(tool.Tool[*deps]{
		Name: "whoami", Description: "Who the caller is.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, _ *deps, _ *mcp.CallToolRequest, _ idArgs) (whoamiOut, error) {
			c, _ := authz.CallerFromContext(ctx)
			return whoamiOut{Subject: c.Subject, Roles: c.Roles}, nil
		}),
	})
	return reg
}

// The test policy's paths are /items/...; the routes' URIs are
// /items/list...: the policy's "^/items/" covers them.

// upstream is an items service that records the bearer of every request
// and accepts only tokens v accepts, answering with their subject.
type upstream struct {
	*httptest.Server
	mu      sync.Mutex
	bearers []string
}

func startUpstream(t *testing.T, v server.TokenVerifier) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok := ""
		if h := r.Header.Get("Authorization"); len(h) > 7 {
			tok = h[7:]
		}
		u.mu.Lock()
		u.bearers = append(u.bearers, tok)
		u.mu.Unlock()
		c, err := v(r.Context(), tok, r)
		if err != nil {
			http.Error(w, "upstream: "+err.Error(), http.StatusUnauthorized)
			return
		}
		io.WriteString(w, c.Subject)
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) seen() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.bearers)
}

// mcpServer serves the test registry over HTTP with verify, and returns
// the endpoint's URL. base is the upstream transport's base (nil: the
// caller's bearer is forwarded, as authz.Transport does).
func mcpServer(t testing.TB, verify server.TokenVerifier, upstreamURL string, base http.RoundTripper, opts server.HTTPServerOptions) string {
	t.Helper()
	p := policy(t)
	d := &deps{base: upstreamURL, client: &http.Client{Transport: authz.Transport(base, "items", upstreamURL, p, authz.Options{})}}
	s, err := server.New(server.Options{Name: "oauth-test", Authorizer: p, Logger: slog.New(slog.DiscardHandler)}, server.Install(testRegistry(), d))
	if err != nil {
		t.Fatal(err)
	}
	opts.Endpoint.Verifier = verify
	if opts.ResourceMetadata == nil {
		opts.ResourceMetadata = &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{"https://id.example.test"}}
	}
	hs, err := server.NewHTTPServer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		hs.Shutdown(ctx)
	})
	return hs.URL()
}

// toolNames lists the tools a client with token sees.
func toolNames(t *testing.T, url, token string) []string {
	t.Helper()
	return servertest.ToolNames(t, servertest.ConnectHTTP(t, url, token, servertest.Options{}))
}

// callTool calls name with args as the client with token and decodes its
// structured result into out.
func callTool(t *testing.T, url, token, name string, args map[string]any, out any) *mcp.CallToolResult {
	t.Helper()
	cs := servertest.ConnectHTTP(t, url, token, servertest.Options{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("tools/call %s: %v", name, err)
	}
	if out != nil && !res.IsError {
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("tools/call %s: %v", name, err)
		}
	}
	return res
}

// post sends an MCP tools/list as a raw HTTP request with the given
// Authorization header ("" for none).
func post(t *testing.T, url, authorization string) *http.Response {
	t.Helper()
	return mcptest.Post(t, url, mcptest.Header(authorization, "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
}

// textOf is the text of a result's contents.
func textOf(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
