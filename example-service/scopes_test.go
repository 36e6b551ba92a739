package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server/servertest"
)

const catalogScopes = `{"rules": [
	{"scope": "catalog:read", "path": "^/catalog/", "methods": ["GET"]},
	{"scope": "catalog:write", "path": "^/catalog/", "methods": ["POST", "PUT", "PATCH", "DELETE"]}
], "implies": {"catalog:write": ["catalog:read"]}}`

// catalogToken is a token of the provider for this service, with roles
// (Keycloak's realm_access.roles) and the space-separated scopes.
func catalogToken(t *testing.T, op *oidctest.Provider, role, scope string) string {
	t.Helper()
	now := time.Now().Unix()
	return op.Sign(t, map[string]any{"iss": op.Issuer, "sub": "sam", "aud": oauthAudience, "iat": now, "exp": now + 300,
		"realm_access": map[string]any{"roles": []string{role}}, "scope": scope})
}

// The kit's -scope-policy lists its scopes in the metadata and, by
// default, hides a tool whose scopes the token lacks; with -step-up it
// lists it by roles and answers its call with one 403 challenge.
func TestScopePolicy(t *testing.T) {
	op, _ := startOIDC(t)
	policy := filepath.Join(t.TempDir(), "scopes.json")
	os.WriteFile(policy, []byte(catalogScopes), 0o600)
	args := []string{"-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-roles-claim", "realm_access.roles", "-public-url", oauthPublic, "-scope-policy", policy}
	reader := catalogToken(t, op, "admin", "catalog:read")

	hidden, stderr := start(t, args...)
	if !strings.Contains(stderr.String(), "(catalog:read catalog:write); tools whose scopes a token lacks are hidden") {
		t.Errorf("the announcement does not tell of the scopes:\n%s", stderr)
	}
	cs := servertest.ConnectHTTP(t, hidden, reader, servertest.Options{})
	if diff := cmp.Diff(viewerTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("an admin with catalog:read sees (-want +got):\n%s", diff)
	}
	cs = servertest.ConnectHTTP(t, hidden, catalogToken(t, op, "admin", "catalog:write"), servertest.Options{})
	if diff := cmp.Diff(adminTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("an admin with catalog:write sees (-want +got):\n%s", diff)
	}

	stepUp, _ := start(t, append(args, "-step-up")...)
	cs = servertest.ConnectHTTP(t, stepUp, reader, servertest.Options{})
	if diff := cmp.Diff(adminTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("with -step-up, an admin with catalog:read sees (-want +got):\n%s", diff)
	}
	req, _ := http.NewRequest(http.MethodPost, stepUp, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_item","arguments":{"name":"x"}}}`))
	req.Header.Set("Authorization", "Bearer "+reader)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || resp.StatusCode != http.StatusForbidden || len(chs) != 1 {
		t.Fatalf("create_item with catalog:read: %s %q (%v), want 403 and one challenge", resp.Status, resp.Header.Values("WWW-Authenticate"), err)
	}
	want := map[string]string{"error": "insufficient_scope", "scope": "catalog:write", "resource_metadata": "https://tools.example.test/.well-known/oauth-protected-resource/mcp"}
	if diff := cmp.Diff(want, chs[0].Params); diff != "" || chs[0].Scheme != "bearer" {
		t.Errorf("challenge %q (-want +got):\n%s", chs[0].Scheme, diff)
	}

	mresp, err := http.Get(strings.TrimSuffix(stepUp, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var md oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(mresp.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"catalog:read", "catalog:write"}, md.ScopesSupported); diff != "" {
		t.Errorf("scopes_supported (-want +got):\n%s", diff)
	}
}
