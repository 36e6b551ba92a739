package oauth_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// testScopes: reading items needs items:read; adding and deleting need
// items:write; deleting needs items:delete too. items:admin implies
// items:write and items:delete, and items:write implies items:read.
func testScopes(t testing.TB) *oauth.Scopes {
	t.Helper()
	sc, err := oauth.ParseScopePolicy([]byte(`{
		"rules": [
			{"scope": "items:read", "path": "^/items/", "methods": ["GET"]},
			{"scope": "items:write", "path": "^/items/", "methods": ["POST", "DELETE"]},
			{"scope": "items:delete", "path": "^/items/list/", "methods": ["DELETE"]}
		],
		"implies": {"items:admin": ["items:write", "items:delete"], "items:write": ["items:read"]}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// scopedToken is a token of the provider for this resource, with roles
// and the space-separated scopes (RFC 9068's "scope" claim).
func scopedToken(t testing.TB, op *oidctest.Provider, roles []string, scope string) string {
	t.Helper()
	now := time.Now().Unix()
	return op.Sign(t, map[string]any{"iss": op.Issuer, "sub": "sam", "aud": resource, "iat": now, "exp": now + 300, "roles": roles, "scope": scope})
}

// scopedServer serves the test tools with scopes enforced: hidden (the
// server's authorizer requires them), or by step-up challenges (tools
// listed by roles, calls of a visible tool whose scopes the token lacks
// answered 403); the upstream transport requires them either way.
func scopedServer(t *testing.T, v *oauth.JWTVerifier, sc *oauth.Scopes, stepUp bool, upstreamURL string) string {
	t.Helper()
	roles := policy(t)
	scoped := sc.Authorizer(roles)
	d := &deps{base: upstreamURL, client: &http.Client{Transport: authz.Transport(nil, "items", upstreamURL, scoped, authz.Options{})}}
	serverAuthz := scoped
	opts := server.HTTPServerOptions{
		Endpoint: server.HTTPOptions{Verifier: v.Verify},
		ResourceMetadata: &oauthex.ProtectedResourceMetadata{
			Resource: resource, AuthorizationServers: []string{"https://id.example.test"}, ScopesSupported: sc.Supported(),
		},
	}
	reg := testRegistry()
	if stepUp {
		serverAuthz = roles
		opts.Endpoint.StepUp = sc.StepUp(roles, reg.Calls())
	}
	s, err := server.New(server.Options{Name: "scopes-test", Authorizer: serverAuthz, Logger: slog.New(slog.DiscardHandler)}, server.Install(reg, d))
	if err != nil {
		t.Fatal(err)
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

// callHTTP posts a tools/call of name as a 2025-11-25 client, or with
// 2026-07-28's Mcp-Method and Mcp-Name headers naming header (if set),
// and returns the response and its body.
func callHTTP(t *testing.T, url, token, name, header string) (*http.Response, string) {
	t.Helper()
	version := "2025-11-25"
	if header != "" {
		version = "2026-07-28"
	}
	h := mcptest.Header("Bearer "+token, version)
	if header != "" {
		h.Set("Mcp-Method", "tools/call")
		h.Set("Mcp-Name", header)
	}
	meta := ""
	if header != "" {
		meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	}
	resp := mcptest.Post(t, url, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+name+`","arguments":{"id":"7"}`+meta+`}}`)
	body, _ := io.ReadAll(resp.Body)
	return resp, string(body)
}

// By default a tool needing a scope the token lacks is hidden: not
// listed, and its call answered exactly as an unknown tool's, with no
// challenge. Scope hierarchies count: items:admin reaches everything.
func TestScopesHidden(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	up := startUpstream(t, v.Verify)
	url := scopedServer(t, v, testScopes(t), false, up.URL)
	for _, tc := range []struct {
		scope string
		want  []string
	}{
		{"", []string{"whoami"}},
		{"items:read", []string{"list_items", "whoami"}},
		{"items:write", []string{"add_item", "list_items", "whoami"}}, // implies items:read
		{"items:write items:delete", []string{"add_item", "delete_item", "list_items", "whoami"}},
		{"items:admin", []string{"add_item", "delete_item", "list_items", "whoami"}},
	} {
		if diff := cmp.Diff(tc.want, toolNames(t, url, scopedToken(t, op, []string{"admin"}, tc.scope))); diff != "" {
			t.Errorf("an admin with scope %q sees (-want +got):\n%s", tc.scope, diff)
		}
	}
	tok := scopedToken(t, op, []string{"admin"}, "items:read")
	hidden, hiddenBody := callHTTP(t, url, tok, "delete_item", "")
	unknown, unknownBody := callHTTP(t, url, tok, "no_such_tool", "")
	if !strings.Contains(unknownBody, `unknown tool \"no_such_tool\"`) || hidden.StatusCode != unknown.StatusCode || strings.ReplaceAll(hiddenBody, "delete_item", "no_such_tool") != unknownBody || hidden.Header.Get("WWW-Authenticate") != "" {
		t.Errorf("a tool hidden by its scopes answers %d %q (challenge %q); an unknown one %d %q", hidden.StatusCode, hiddenBody, hidden.Header.Get("WWW-Authenticate"), unknown.StatusCode, unknownBody)
	}
}

// stepUpChallenge returns a 403's Bearer challenge.
func stepUpChallenge(t *testing.T, resp *http.Response) map[string]string {
	t.Helper()
	if resp.StatusCode != http.StatusForbidden {
		t.Fatalf("status %s, want 403", resp.Status)
	}
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(chs) != 1 || chs[0].Scheme != "bearer" {
		t.Fatalf("WWW-Authenticate %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	return chs[0].Params
}

// With step-up, a visible tool's call whose token lacks scopes gets 403
// with one challenge naming every scope the tool needs (MCP 2026-07-28),
// read from the Mcp-Name header or, for older clients, the body; a tool
// the caller's roles hide answers as an unknown tool, with no challenge
// and no scope named; a token with the scopes (or broader ones) calls.
func TestScopesStepUp(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	up := startUpstream(t, v.Verify)
	url := scopedServer(t, v, testScopes(t), true, up.URL)
	admin := scopedToken(t, op, []string{"admin"}, "items:read")
	// Listed by roles alone.
	if diff := cmp.Diff([]string{"add_item", "delete_item", "list_items", "whoami"}, toolNames(t, url, admin)); diff != "" {
		t.Errorf("an admin with items:read sees (-want +got):\n%s", diff)
	}
	want := map[string]string{
		"error":             "insufficient_scope",
		"scope":             "items:delete items:write",
		"resource_metadata": "https://tools.example.test/.well-known/oauth-protected-resource/mcp",
	}
	for _, header := range []string{"", "delete_item"} {
		resp, _ := callHTTP(t, url, admin, "delete_item", header)
		if diff := cmp.Diff(want, stepUpChallenge(t, resp)); diff != "" {
			t.Errorf("Mcp-Name %q: the challenge (-want +got):\n%s", header, diff)
		}
	}
	if n := len(up.seen()); n != 0 {
		t.Errorf("the upstream saw %d requests, want none", n)
	}
	// Scopes held, or implied, call.
	for _, scope := range []string{"items:write items:delete", "items:admin"} {
		resp, body := callHTTP(t, url, scopedToken(t, op, []string{"admin"}, scope), "delete_item", "")
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "isError\":true") || !strings.Contains(body, "sam") {
			t.Errorf("scope %q: %s %s, want the upstream's answer", scope, resp.Status, body)
		}
	}
	// A viewer's roles hide delete_item: it answers as an unknown tool.
	viewer := scopedToken(t, op, []string{"viewer"}, "items:read")
	hidden, hiddenBody := callHTTP(t, url, viewer, "delete_item", "delete_item")
	unknown, unknownBody := callHTTP(t, url, viewer, "no_such_tool", "no_such_tool")
	if !strings.Contains(unknownBody, `unknown tool \"no_such_tool\"`) || hidden.StatusCode != unknown.StatusCode || strings.ReplaceAll(hiddenBody, "delete_item", "no_such_tool") != unknownBody ||
		hidden.Header.Get("WWW-Authenticate") != "" || strings.Contains(hiddenBody, "items:") {
		t.Errorf("a tool hidden by roles answers %d %q (challenge %q); an unknown one %d %q", hidden.StatusCode, hiddenBody, hidden.Header.Get("WWW-Authenticate"), unknown.StatusCode, unknownBody)
	}
	// Only calls are challenged: a list is served.
	if resp := post(t, url, "Bearer "+admin); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list: %s", resp.Status)
	}
}

// The upstream transport requires scopes whatever the HTTP layer let
// through: a client naming another tool in Mcp-Name (a pre-2026 one,
// whose headers the SDK does not check) reaches the call, whose request
// is refused before it leaves.
func TestScopesGuardUpstream(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	up := startUpstream(t, v.Verify)
	url := scopedServer(t, v, testScopes(t), true, up.URL)
	h := mcptest.Header("Bearer "+scopedToken(t, op, []string{"admin"}, "items:read"), "2025-11-25")
	h.Set("Mcp-Method", "tools/call")
	h.Set("Mcp-Name", "list_items")
	resp := mcptest.Post(t, url, h, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"add_item","arguments":{"id":"7"}}}`)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "insufficient_scope") || len(up.seen()) != 0 {
		t.Errorf("%s %s; the upstream saw %d requests; want a refusal (insufficient_scope) and none", resp.Status, body, len(up.seen()))
	}
}

// Needed names every scope of every route; Covers follows implications
// transitively; Supported names every scope, implied ones too.
func TestScopesNeeded(t *testing.T) {
	sc := testScopes(t)
	get := tool.ServiceRoute("items", http.MethodGet, "/list")
	del := tool.ServiceRoute("items", http.MethodDelete, "/list/{id}")
	other := tool.ServiceRoute("other", http.MethodGet, "/x")
	if diff := cmp.Diff([]string{"items:delete", "items:read", "items:write"}, sc.Needed(get, del, other)); diff != "" {
		t.Errorf("Needed (-want +got):\n%s", diff)
	}
	if got := sc.Needed(other); got != nil {
		t.Errorf("Needed(a route no rule matches) = %v", got)
	}
	if diff := cmp.Diff([]string{"items:admin", "items:delete", "items:read", "items:write"}, sc.Supported()); diff != "" {
		t.Errorf("Supported (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		held, need []string
		want       bool
	}{
		{[]string{"items:admin"}, []string{"items:read"}, true}, // admin → write → read
		{[]string{"items:read"}, []string{"items:write"}, false},
		{[]string{"items:delete"}, []string{"items:delete", "items:write"}, false},
		{nil, nil, true},
	} {
		if got := sc.Covers(tc.held, tc.need); got != tc.want {
			t.Errorf("Covers(%v, %v) = %v, want %v", tc.held, tc.need, got, tc.want)
		}
	}
}

// A scope policy names what is wrong.
func TestParseScopePolicyRefuses(t *testing.T) {
	for _, tc := range []struct{ policy, want string }{
		{`{"rules": []}`, "no rules"},
		{`{"rules": [{"scope": "a b", "path": "^/", "methods": ["GET"]}]}`, `rules[0]: scope "a b" holds ' '`},
		{`{"rules": [{"scope": "a", "path": "(", "methods": ["GET"]}]}`, `"a"`},
		{`{"rules": [{"scope": "a", "path": "^/", "methods": ["GET"]}], "implies": {"b": ["c\""]}}`, `implies["b"]: scope "c\""`},
		{`{"rules": [], "extra": 1}`, "unknown field"},
	} {
		if _, err := oauth.ParseScopePolicy([]byte(tc.policy)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseScopePolicy(%s) = %v, want %q", tc.policy, err, tc.want)
		}
	}
}

// The verifier reads the granted scopes: RFC 9068's space-separated
// "scope", or an array claim such as Entra ID's "scp".
func TestJWTScopes(t *testing.T) {
	op := startOP(t)
	now := time.Now().Unix()
	claims := map[string]any{"iss": op.Issuer, "sub": "sam", "aud": resource, "iat": now, "exp": now + 60, "scope": "items:read  items:write", "scp": []string{"a", "b"}}
	for _, tc := range []struct {
		claim string
		want  []string
	}{{"", []string{"items:read", "items:write"}}, {"scp", []string{"a", "b"}}} {
		v := newJWTVerifier(t, op, oauth.JWTOptions{ScopesClaim: tc.claim})
		c, err := v.Verify(context.Background(), op.Sign(t, claims), nil)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, c.Scopes); diff != "" {
			t.Errorf("ScopesClaim %q (-want +got):\n%s", tc.claim, diff)
		}
	}
}
