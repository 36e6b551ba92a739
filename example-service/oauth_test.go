package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/internal/testing/tsclient"
	"github.com/toolroute/toolroute/server/servertest"
)

const (
	oauthAudience = "example-service"
	oauthPublic   = "https://tools.example.test/mcp"
	catalogAud    = "catalog-api"
)

// startOIDC starts a provider whose users are alice (viewer), bob
// (editor), carol (admin) and olivia (editor, opaque tokens), and whose
// client "example-service" is this service's own (introspection, token
// exchange). It returns the provider and that client's secret file.
func startOIDC(t *testing.T) (*oidctest.Provider, string) {
	aud := []string{oauthAudience}
	op := oidctest.Start(t,
		oidctest.Client{ID: "alice", Secret: "alice-secret", Audience: aud, Claims: map[string]any{"realm_access": map[string]any{"roles": []string{"viewer"}}}},
		oidctest.Client{ID: "bob", Secret: "bob-secret", Audience: aud, Claims: map[string]any{"realm_access": map[string]any{"roles": []string{"editor"}}}},
		oidctest.Client{ID: "carol", Secret: "carol-secret", Audience: aud, Claims: map[string]any{"realm_access": map[string]any{"roles": []string{"admin"}}}},
		oidctest.Client{ID: "olivia", Secret: "olivia-secret", Audience: aud, Opaque: true, Claims: map[string]any{"realm_access": map[string]any{"roles": []string{"editor"}}}},
		oidctest.Client{ID: "example-service", Secret: "service-secret", Exchange: true},
	)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("service-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return op, secret
}

// In OAuth mode each role sees its tools, and the catalog (embedded,
// checking tokens) gets an exchanged token, never the client's.
func TestOAuth(t *testing.T) {
	op, secret := startOIDC(t)
	url, stderr := start(t, "-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-roles-claim", "realm_access.roles",
		"-public-url", oauthPublic, "-upstream-audience", catalogAud, "-exchange-client-id", "example-service", "-exchange-secret-file", secret)
	for _, tc := range []struct {
		user string
		want []string
	}{{"alice", viewerTools}, {"bob", editorTools}, {"carol", adminTools}} {
		cs := servertest.ConnectHTTP(t, url, op.Token(t, tc.user), servertest.Options{})
		if diff := cmp.Diff(tc.want, servertest.ToolNames(t, cs)); diff != "" {
			t.Errorf("%s's tools (-want +got):\n%s", tc.user, diff)
		}
	}
	cs := servertest.ConnectHTTP(t, url, op.Token(t, "carol"), servertest.Options{})
	before := op.Requests("/oauth/token")
	for range 3 {
		out, errText, err := call(t, cs, "list_items", nil)
		if err != nil || errText != "" || len(out["items"].([]any)) == 0 {
			t.Fatalf("list_items: %v %q %v\n%s", out, errText, err, stderr)
		}
	}
	if n := op.Requests("/oauth/token") - before; n != 1 {
		t.Errorf("%d token exchanges for 3 calls, want 1", n)
	}
	out, _, _ := call(t, cs, "whoami", nil)
	if out["subject"] != "carol" {
		t.Errorf("whoami: %v", out)
	}
	if !strings.Contains(stderr.String(), "upstream requests carry tokens exchanged for audience "+catalogAud) {
		t.Errorf("the announcement does not tell about the exchange:\n%s", stderr)
	}

	// The metadata, and the challenge of a 401.
	base := strings.TrimSuffix(url, "/mcp")
	resp, err := http.Get(base + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	var md oauthex.ProtectedResourceMetadata
	json.NewDecoder(resp.Body).Decode(&md)
	resp.Body.Close()
	if md.Resource != oauthPublic || len(md.AuthorizationServers) != 1 || md.AuthorizationServers[0] != op.Issuer {
		t.Errorf("metadata: %+v", md)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+op.Token(t, "carol")+"x")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	want := `Bearer resource_metadata="https://tools.example.test/.well-known/oauth-protected-resource/mcp", error="invalid_token"`
	if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != want {
		t.Errorf("tampered token: %s %q, want 401 %q", resp.Status, resp.Header.Get("WWW-Authenticate"), want)
	}
}

// Opaque tokens are introspected; without -upstream-audience the catalog
// gets no token at all.
func TestOAuthIntrospection(t *testing.T) {
	op, secret := startOIDC(t)
	url, stderr := start(t, "-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-roles-claim", "realm_access.roles",
		"-public-url", oauthPublic, "-introspect", op.Issuer+"/oauth/introspect", "-introspect-client-id", "example-service", "-introspect-secret-file", secret)
	cs := servertest.ConnectHTTP(t, url, op.Token(t, "olivia"), servertest.Options{})
	if diff := cmp.Diff(editorTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("olivia's tools (-want +got):\n%s", diff)
	}
	if out, errText, err := call(t, cs, "list_items", nil); err != nil || errText != "" || out == nil {
		t.Errorf("list_items: %v %q %v", out, errText, err)
	}
	if !strings.Contains(stderr.String(), "upstream requests carry no token") {
		t.Errorf("the announcement does not tell the catalog gets no token:\n%s", stderr)
	}
}

// With the provider down at start, the service serves: /readyz answers
// 503 (its log names the issuer; the answer does not), and a request
// gets 503, not 401.
func TestOAuthProviderDown(t *testing.T) {
	op, _ := startOIDC(t)
	tok := op.Token(t, "carol")
	op.Stop()
	url, stderr := start(t, "-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-public-url", oauthPublic)
	resp, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), op.Issuer) {
		t.Errorf("/readyz: %s %q, want 503 not naming the issuer", resp.Status, body)
	}
	if !stderr.waitFor("toolroute: not ready", op.Issuer) {
		t.Errorf("the log does not name the issuer:\n%s", stderr)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "authorization server unavailable") {
		t.Errorf("tools/list: %s %q, want 503", resp.Status, body)
	}
}

func TestOAuthFlagErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-tokens", "t.json"}, "-oidc-issuer and -tokens exclude each other"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-proxy-auth", "http://127.0.0.1:1"}, "-oidc-issuer and -proxy-auth exclude each other"},
		{[]string{"-oidc-issuer", "https://id.example.test"}, "-oidc-issuer needs -audience"},
		{[]string{"-audience", "a"}, "-audience needs -oidc-issuer"},
		{[]string{"-oidc-issuer", "id.example.test", "-audience", "a"}, "-oidc-issuer: \"id.example.test\" is not an http(s) URL"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-introspect", "https://id.example.test/introspect"}, "-introspect needs -introspect-client-id and -introspect-secret-file"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-upstream-audience", "c"}, "-upstream-audience needs -exchange-client-id and -exchange-secret-file"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-addr", "127.0.0.1:0"}, "needs -public-url"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-stdio"}, "-oidc-issuer applies to HTTP only"},
		{[]string{"-oidc-issuer", "https://id.example.test", "-audience", "a", "-introspect", "https://id.example.test/i", "-introspect-client-id", "x", "-introspect-secret-file", "/nonexistent/secret"}, "-introspect-secret-file"},
	} {
		// check refuses what serve refuses, but for what only a start
		// finds (an upstream that does not answer) and a positional
		// argument (a subcommand there).
		for _, args := range [][]string{tt.args, append([]string{"check"}, tt.args...)} {
			if args[0] == "check" && (strings.Contains(tt.want, "warming service") || strings.Contains(tt.want, "unknown command")) {
				continue
			}
			var stderr bytes.Buffer
			err := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			if err == nil {
				t.Errorf("run %q: no error", args)
				continue
			}
			if got := err.Error() + "\n" + stderr.String(); !strings.Contains(got, tt.want) {
				t.Errorf("run %q: %q does not contain %q", args, got, tt.want)
			}
		}
	}
}

// The official TypeScript SDK client finds the authorization server
// through the protected resource metadata of a 401, gets a token from
// the provider (client credentials) and uses the service with it
// (test/tsclient/oauth.mjs; see internal/testing/tsclient for what it needs).
func TestTypeScriptClientOAuth(t *testing.T) {
	node, script := tsclient.Script(t, "oauth.mjs")
	// The metadata's resource must be the URL the client connects to, so
	// the port is chosen first.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	public := "http://" + addr + "/mcp"
	op := oidctest.Start(t,
		oidctest.Client{ID: "ts-client", Secret: "ts-secret", Audience: []string{public}, Claims: map[string]any{"roles": []string{"editor"}}})
	url, _ := start(t, "-addr", addr, "-oidc-issuer", op.Issuer, "-audience", public, "-public-url", public)

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, url, "ts-client", "ts-secret")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node oauth.mjs: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	t.Logf("TypeScript client: %s", stdout.String())
	var got struct {
		Tools  []string       `json:"tools"`
		Whoami map[string]any `json:"whoami"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("output %q: %v", stdout.String(), err)
	}
	if diff := cmp.Diff(editorTools, got.Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if got.Whoami["subject"] != "ts-client" {
		t.Errorf("whoami: %v", got.Whoami)
	}
	if n := op.Requests("/oauth/token"); n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}
