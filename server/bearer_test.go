package server_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/server"
)

// Each refusal of the bearer middleware: its status, its challenge (RFC
// 6750 §3, RFC 9728 §5.1) and its body.
func TestHTTPBearerAnswers(t *testing.T) {
	outage := func(context.Context, string, *http.Request) (authz.Caller, error) {
		return authz.Caller{}, &authz.OutageError{Err: errors.New("idp.example.test: connection refused")}
	}
	broken := func(context.Context, string, *http.Request) (authz.Caller, error) {
		return authz.Caller{}, errors.New("verifier bug")
	}
	static := server.StaticTokens(map[string]authz.Caller{secretToken: {Subject: "alice"}})
	md := &oauthex.ProtectedResourceMetadata{Resource: "https://tools.example.test/svc/mcp/", AuthorizationServers: []string{"https://id.example.test"}}
	const mdURL = `resource_metadata="https://tools.example.test/.well-known/oauth-protected-resource/svc/mcp"`
	tests := []struct {
		name          string
		verifier      server.TokenVerifier
		metadata      *oauthex.ProtectedResourceMetadata
		authorization string
		status        int
		challenge     string
		body          string
	}{
		{"no token", static, nil, "", 401, "Bearer", "no bearer token"},
		{"no token, metadata", static, md, "", 401, "Bearer " + mdURL, "no bearer token"},
		{"bad token", static, nil, "Bearer nope", 401, `Bearer error="invalid_token"`, "invalid token"},
		{"bad token, metadata", static, md, "Bearer nope", 401, "Bearer " + mdURL + `, error="invalid_token"`, "invalid token"},
		{"outage", outage, md, "Bearer " + secretToken, 503, "", "authorization server unavailable"},
		{"broken verifier", broken, md, "Bearer " + secretToken, 500, "", "token verification unavailable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := startHTTPServer(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: tt.verifier}, ResourceMetadata: tt.metadata})
			resp := post(t, hs.URL(), tt.authorization, initializeBody)
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.status || resp.Header.Get("WWW-Authenticate") != tt.challenge || !strings.Contains(string(body), tt.body) {
				t.Errorf("got %d %q %q, want %d %q %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body, tt.status, tt.challenge, tt.body)
			}
			if strings.Contains(string(body), secretToken) || strings.Contains(string(body), "idp.example.test") {
				t.Errorf("the body tells too much: %q", body)
			}
		})
	}
}

// The metadata is served at the root well-known path, with the
// endpoint's path, and with the resource URL's path; a resource that is
// not an absolute URL is refused.
func TestHTTPResourceMetadata(t *testing.T) {
	md := &oauthex.ProtectedResourceMetadata{Resource: "https://tools.example.test/svc/mcp", AuthorizationServers: []string{"https://id.example.test"}}
	hs := startHTTPServer(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(nil)}, ResourceMetadata: md})
	base := strings.TrimSuffix(hs.URL(), "/mcp")
	for _, p := range []string{"/.well-known/oauth-protected-resource", "/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource/svc/mcp"} {
		resp, err := http.Get(base + p)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(body), `"resource":"https://tools.example.test/svc/mcp"`) {
			t.Errorf("GET %s: %s %s", p, resp.Status, body)
		}
	}
	resp, err := http.Get(base + "/.well-known/oauth-protected-resource/other")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET another resource's metadata: %s, want 404", resp.Status)
	}
	for _, bad := range []string{"", "/mcp", "tools.example.test/mcp", "https://tools.example.test/mcp#x"} {
		_, err := server.NewHTTPServer(newTestServer(t, server.Options{}, newDeps("a")), server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(nil)}, ResourceMetadata: &oauthex.ProtectedResourceMetadata{Resource: bad}})
		if err == nil || !strings.Contains(err.Error(), "server: HTTPServerOptions.ResourceMetadata.Resource") {
			t.Errorf("Resource %q: err = %v", bad, err)
		}
	}
}

// TestHTTPTwoAuthorizationHeaders: a request with two Authorization
// headers is refused (400) whichever comes first, so that a proxy in
// front (which may read the other) and the server never disagree about
// the caller; with Anonymous too.
func TestHTTPTwoAuthorizationHeaders(t *testing.T) {
	for _, anonymous := range []*authz.Caller{nil, {Subject: "anon", Roles: []string{"viewer"}}} {
		hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{Anonymous: anonymous})
		for _, order := range [][2]string{{"Bearer junk", "Bearer " + secretToken}, {"Bearer " + secretToken, "Bearer junk"}, {"Bearer " + secretToken, "Bearer " + secretToken}} {
			h := mcptest.Header("", "2025-11-25")
			h.Add("Authorization", order[0])
			h.Add("Authorization", order[1])
			resp := mcptest.Post(t, hs.URL(), h, initializeBody)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("anonymous %v, Authorization %q then %q: HTTP %d, want 400", anonymous != nil, order[0], order[1], resp.StatusCode)
			}
		}
	}
}

// HTTPOptions.Wrap sees a request before its caller is identified: here
// it hands a scheme of its own on as a bearer token, which the endpoint
// then verifies as any; the anonymous caller too is served behind it.
func TestHTTPWrap(t *testing.T) {
	var seen []string
	wrap := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			seen = append(seen, r.Header.Get("Authorization"))
			if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Custom "); ok {
				r.Header.Set("Authorization", "Bearer "+tok)
			}
			next.ServeHTTP(w, r)
		})
	}
	anon := &authz.Caller{Subject: "anon", Roles: []string{"viewer"}}
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{Wrap: wrap, Anonymous: anon})
	for _, tc := range []struct {
		authorization string
		want          int
	}{
		{"Custom " + secretToken, http.StatusOK},
		{"Custom junk", http.StatusUnauthorized},
		{"", http.StatusOK}, // anonymous, behind Wrap
	} {
		if resp := mcptest.Post(t, hs.URL(), mcptest.Header(tc.authorization, "2025-11-25"), initializeBody); resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: HTTP %d, want %d", tc.authorization, resp.StatusCode, tc.want)
		}
	}
	if len(seen) != 3 {
		t.Errorf("Wrap saw %d requests, want 3", len(seen))
	}
	if _, err := server.NewHTTPServer(newTestServer(t, server.Options{}, newDeps("b")), server.HTTPServerOptions{Endpoint: server.HTTPOptions{
		Verifier: server.StaticTokens(testTokens),
		Wrap:     func(http.Handler) http.Handler { return nil },
	}}); err == nil || !strings.Contains(err.Error(), "HTTPOptions.Wrap returned a nil handler") {
		t.Errorf("a Wrap returning nil: %v", err)
	}
}

// HTTPOptions.StepUp is asked once a request's token is verified, with
// its caller, and the scopes it returns are answered with 403 and one
// insufficient_scope challenge naming them all; a refused token and an
// anonymous request are not asked.
func TestHTTPStepUp(t *testing.T) {
	var asked []string
	stepUp := func(r *http.Request, c authz.Caller) []string {
		asked = append(asked, c.Subject)
		if r.Header.Get("Mcp-Name") == "needs_more" {
			return []string{"items:write", "items:delete"}
		}
		return nil
	}
	md := &oauthex.ProtectedResourceMetadata{Resource: "https://tools.example.test/mcp", AuthorizationServers: []string{"https://id.example.test"}}
	hs := startHTTPServer(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPServerOptions{
		Endpoint:         server.HTTPOptions{StepUp: stepUp, Anonymous: &authz.Caller{Subject: "anon", Roles: []string{"viewer"}}},
		ResourceMetadata: md,
	})
	h := mcptest.Header("Bearer "+secretToken, "2025-11-25")
	h.Set("Mcp-Name", "needs_more")
	resp := mcptest.Post(t, hs.URL(), h, initializeBody)
	const want = `Bearer resource_metadata="https://tools.example.test/.well-known/oauth-protected-resource/mcp", error="insufficient_scope", scope="items:write items:delete"`
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("HTTP %d, WWW-Authenticate %q; want 403 %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"), want)
	}
	if resp := mcptest.Post(t, hs.URL(), mcptest.Header("Bearer "+secretToken, "2025-11-25"), initializeBody); resp.StatusCode != http.StatusOK {
		t.Errorf("no scopes to ask for: HTTP %d, want 200", resp.StatusCode)
	}
	mcptest.Post(t, hs.URL(), mcptest.Header("Bearer junk", "2025-11-25"), initializeBody)
	mcptest.Post(t, hs.URL(), mcptest.Header("", "2025-11-25"), initializeBody)
	if strings.Join(asked, ",") != "alice,alice" {
		t.Errorf("StepUp asked about %q, want the verified caller alice twice", asked)
	}
}
