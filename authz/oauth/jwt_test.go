package oauth_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server"
)

// Each role sees exactly its tools, over real HTTP, with tokens from the
// provider's token endpoint; the roles claim is configurable.
func TestJWTRolesSeeTheirTools(t *testing.T) {
	op := startOP(t)
	viewer := []string{"list_items", "whoami"}
	editor := []string{"add_item", "list_items", "whoami"}
	admin := []string{"add_item", "delete_item", "list_items", "whoami"}
	for _, tc := range []struct {
		claim  string
		client string
		want   []string
	}{
		{"", "alice", viewer},
		{"", "bob", editor},
		{"", "carol", admin},
		{"", "dave", []string{"whoami"}}, // no roles claim: authenticated, local tools only
		{"realm_access.roles", "erin", editor},
		{"realm_access.roles", "alice", []string{"whoami"}},
		{"groups", "frank", admin},
	} {
		t.Run(tc.client+"/"+tc.claim, func(t *testing.T) {
			v := newJWTVerifier(t, op, oauth.JWTOptions{RolesClaim: tc.claim})
			url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
			if diff := cmp.Diff(tc.want, toolNames(t, url, op.Token(t, tc.client))); diff != "" {
				t.Errorf("tools (-want +got):\n%s", diff)
			}
		})
	}
}

// whoami shows the subject and roles of the token.
func TestJWTCaller(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	var got whoamiOut
	callTool(t, url, op.Token(t, "bob"), "whoami", nil, &got)
	if diff := cmp.Diff(whoamiOut{Subject: "bob", Roles: []string{"editor"}}, got); diff != "" {
		t.Errorf("whoami (-want +got):\n%s", diff)
	}
	// A space-separated claim (the "scope" shape), signed by the provider.
	v = newJWTVerifier(t, op, oauth.JWTOptions{RolesClaim: "scope"})
	now := time.Now().Unix()
	c, err := v.Verify(context.Background(), op.Sign(t, map[string]any{
		"iss": op.Issuer, "sub": "sam", "aud": resource, "iat": now, "exp": now + 60, "scope": "viewer  editor",
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"viewer", "editor"}, c.Roles); diff != "" {
		t.Errorf("roles from scope (-want +got):\n%s", diff)
	}
	// An agent acting for a user (RFC 8693): the client is "azp", the
	// actors the "act" chain, the current actor first.
	c, err = v.Verify(context.Background(), op.Sign(t, map[string]any{
		"iss": op.Issuer, "sub": "alice", "aud": resource, "iat": now, "exp": now + 60, "azp": "billing-agent", "client_id": "ignored",
		"act": map[string]any{"sub": "agent-7", "act": map[string]any{"sub": "orchestrator"}},
	}), nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Subject != "alice" || c.Client != "billing-agent" || !slices.Equal(c.Actors, []string{"agent-7", "orchestrator"}) {
		t.Errorf("delegated caller = %v, want alice acted for by agent-7 for orchestrator, client billing-agent", c)
	}
	// Without "azp", "client_id" names the client.
	c, err = v.Verify(context.Background(), op.Sign(t, map[string]any{
		"iss": op.Issuer, "sub": "alice", "aud": resource, "iat": now, "exp": now + 60, "client_id": "cli",
	}), nil)
	if err != nil || c.Client != "cli" || c.Actors != nil {
		t.Errorf("client_id only: %v, %v", c, err)
	}
}

// b64 and unb64 are JWT's base64url without padding.
func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }
func unb64(t *testing.T, s string) []byte {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Every bad token is refused with 401 and a challenge saying
// invalid_token, naming the resource metadata.
func TestJWTRefused(t *testing.T) {
	op := startOP(t)
	other := startOP(t) // another issuer
	good := op.Token(t, "alice")
	parts := strings.Split(good, ".")
	var header map[string]any
	json.Unmarshal(unb64(t, parts[0]), &header)
	kid, _ := header["kid"].(string)
	now := time.Now().Unix()

	// alg "none", the payload of a good token.
	none := b64([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + parts[1] + "."
	// HS256 with the provider's public key (PEM) as the HMAC secret: the
	// classic algorithm confusion.
	der, _ := x509.MarshalPKIXPublicKey(op.PublicKey())
	pemKey := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	hsHead := b64([]byte(`{"alg":"HS256","typ":"JWT","kid":"` + kid + `"}`))
	mac := hmac.New(sha256.New, pemKey)
	mac.Write([]byte(hsHead + "." + parts[1]))
	hs256 := hsHead + "." + parts[1] + "." + b64(mac.Sum(nil))
	// The payload changed to claim admin, the signature kept.
	var claims map[string]any
	json.Unmarshal(unb64(t, parts[1]), &claims)
	claims["roles"] = []string{"admin"}
	p, _ := json.Marshal(claims)
	tampered := parts[0] + "." + b64(p) + "." + parts[2]

	for _, tc := range []struct{ name, token, why string }{
		{"expired", op.Token(t, "late"), "token is expired"},
		{"not yet valid", op.Token(t, "early"), "token is not valid yet"},
		{"wrong issuer, right key", op.Sign(t, map[string]any{"iss": "https://evil.example.test", "sub": "alice", "aud": resource, "iat": now, "exp": now + 60, "roles": []string{"admin"}}), "invalid issuer"},
		{"another issuer", other.Token(t, "carol"), "key not found"},
		{"wrong audience", op.Token(t, "mallory"), "invalid audience"},
		{"alg none", none, "signing method none is invalid"},
		{"HS256 signed with the public key", hs256, "signing method HS256 is invalid"},
		{"tampered payload", tampered, "verification error"},
		{"no subject", op.Sign(t, map[string]any{"iss": op.Issuer, "aud": resource, "iat": now, "exp": now + 60}), `no "sub" claim`},
		{"no expiry", op.Sign(t, map[string]any{"iss": op.Issuer, "sub": "alice", "aud": resource, "iat": now}), "exp claim is required"},
		{"roles of the wrong shape", op.Sign(t, map[string]any{"iss": op.Issuer, "sub": "alice", "aud": resource, "iat": now, "exp": now + 60, "roles": 7}), `claim "roles" is a float64`},
		{"not a JWT", "not-a-jwt", "malformed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := newJWTVerifier(t, op, oauth.JWTOptions{})
			// The verifier holds the keys already (a good token passed).
			if _, err := v.Verify(context.Background(), good, nil); err != nil {
				t.Fatalf("good token: %v", err)
			}
			_, err := v.Verify(context.Background(), tc.token, nil)
			if !errors.Is(err, server.ErrInvalidToken) {
				t.Fatalf("Verify = %v, want ErrInvalidToken", err)
			}
			if !strings.Contains(err.Error(), tc.why) {
				t.Errorf("Verify = %v, want it refused because %s", err, tc.why)
			}
			if strings.Contains(err.Error(), tc.token) {
				t.Errorf("the error holds the token: %v", err)
			}
			url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
			resp := post(t, url, "Bearer "+tc.token)
			checkChallenge(t, resp, `invalid_token`)
		})
	}
}

// checkChallenge checks a 401 with a Bearer challenge naming the
// resource metadata and, if wantErr is set, the error.
func checkChallenge(t *testing.T, resp *http.Response, wantErr string) {
	t.Helper()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %s, want 401", resp.Status)
	}
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil || len(chs) != 1 {
		t.Fatalf("WWW-Authenticate %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	want := map[string]string{"resource_metadata": "https://tools.example.test/.well-known/oauth-protected-resource/mcp"}
	if wantErr != "" {
		want["error"] = wantErr
	}
	if chs[0].Scheme != "bearer" {
		t.Errorf("scheme %q, want bearer", chs[0].Scheme)
	}
	if diff := cmp.Diff(want, chs[0].Params); diff != "" {
		t.Errorf("challenge (-want +got):\n%s", diff)
	}
}

// Without a token: 401 with the challenge and no error (RFC 6750 §3.1);
// with a malformed header too.
func TestChallengeWithoutToken(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	checkChallenge(t, post(t, url, ""), "")
	checkChallenge(t, post(t, url, "Basic YWxpY2U6eA=="), "")
}

// The protected resource metadata is served at the well-known path with
// the endpoint's path appended, and at the root form.
func TestResourceMetadata(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{
		ResourceMetadata: &oauthex.ProtectedResourceMetadata{Resource: resource, AuthorizationServers: []string{op.Issuer}, BearerMethodsSupported: []string{"header"}},
	})
	base := strings.TrimSuffix(url, "/mcp")
	for _, path := range []string{"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("GET %s: %s %q", path, resp.Status, resp.Header.Get("Content-Type"))
		}
		var got map[string]any
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatal(err)
		}
		want := map[string]any{"resource": resource, "authorization_servers": []any{op.Issuer}, "bearer_methods_supported": []any{"header"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET %s (-want +got):\n%s", path, diff)
		}
	}
}

// A token signed with a key the verifier does not hold makes it fetch
// the key set again, and is accepted; another unknown key within
// MinRefreshInterval is refused without a fetch.
func TestJWTKeyRotation(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	if _, err := v.Verify(context.Background(), op.Token(t, "alice"), nil); err != nil {
		t.Fatal(err)
	}
	if n := op.Requests("/keys"); n != 1 {
		t.Fatalf("%d key set fetches, want 1", n)
	}
	op.Rotate()
	c, err := v.Verify(context.Background(), op.Token(t, "bob"), nil)
	if err != nil {
		t.Fatalf("token of the new key: %v", err)
	}
	if c.Subject != "bob" {
		t.Errorf("subject %q", c.Subject)
	}
	if n := op.Requests("/keys"); n != 2 {
		t.Fatalf("%d key set fetches, want 2", n)
	}
	op.Rotate()
	if _, err := v.Verify(context.Background(), op.Token(t, "bob"), nil); !errors.Is(err, server.ErrInvalidToken) {
		t.Fatalf("second rotation within MinRefreshInterval: %v, want ErrInvalidToken", err)
	}
	if n := op.Requests("/keys"); n != 2 {
		t.Fatalf("%d key set fetches, want 2 (rate-limited)", n)
	}
	// Once the interval passed, the new key is fetched.
	v2 := newJWTVerifier(t, op, oauth.JWTOptions{MinRefreshInterval: time.Millisecond})
	if _, err := v2.Verify(context.Background(), op.Token(t, "bob"), nil); err != nil {
		t.Fatal(err)
	}
	op.Rotate()
	time.Sleep(5 * time.Millisecond)
	if _, err := v2.Verify(context.Background(), op.Token(t, "bob"), nil); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
}

// With the provider down, the keys held keep verifying; a verifier that
// holds none fails closed with 503 (not 401), and is not ready.
func TestJWTProviderDown(t *testing.T) {
	t.Run("keys held", func(t *testing.T) {
		op := startOP(t)
		v := newJWTVerifier(t, op, oauth.JWTOptions{})
		first, second := op.Token(t, "alice"), op.Token(t, "carol")
		if _, err := v.Verify(context.Background(), first, nil); err != nil {
			t.Fatal(err)
		}
		op.Stop()
		url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{ReadyCheck: v.Ready})
		if diff := cmp.Diff([]string{"add_item", "delete_item", "list_items", "whoami"}, toolNames(t, url, second)); diff != "" {
			t.Errorf("tools (-want +got):\n%s", diff)
		}
		if err := v.Ready(context.Background()); err != nil {
			t.Errorf("not ready with keys held: %v", err)
		}
	})
	t.Run("no keys", func(t *testing.T) {
		op := startOP(t)
		tok := op.Token(t, "alice")
		op.Stop()
		v := newJWTVerifier(t, op, oauth.JWTOptions{})
		_, err := v.Verify(context.Background(), tok, nil)
		var outage *authz.OutageError
		if !errors.As(err, &outage) {
			t.Fatalf("Verify = %v, want an OutageError", err)
		}
		url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{ReadyCheck: v.Ready})
		resp := post(t, url, "Bearer "+tok)
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "authorization server unavailable") {
			t.Errorf("got %s %q, want 503 saying the authorization server is unavailable", resp.Status, body)
		}
		if resp.Header.Get("WWW-Authenticate") != "" {
			t.Errorf("a 503 with a challenge: %q", resp.Header.Get("WWW-Authenticate"))
		}
		if err := v.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "no keys of issuer "+op.Issuer) {
			t.Errorf("Ready without keys = %v, want an error naming the issuer", err)
		}
		ready, err := http.Get(strings.TrimSuffix(url, "/mcp") + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		why, _ := io.ReadAll(ready.Body)
		ready.Body.Close()
		// The log names the issuer; /readyz, on the public port, does not.
		if ready.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(why), op.Issuer) {
			t.Errorf("/readyz: %s %q, want 503 not naming the issuer", ready.Status, why)
		}
	})
}

func TestNewJWTVerifierRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts oauth.JWTOptions
		want string
	}{
		{"no issuer", oauth.JWTOptions{Audience: resource}, "Issuer is empty"},
		{"issuer not a URL", oauth.JWTOptions{Issuer: "id.example.test", Audience: resource}, "not an http(s) URL"},
		{"no audience", oauth.JWTOptions{Issuer: "https://id.example.test"}, "Audience is empty"},
		{"HS256", oauth.JWTOptions{Issuer: "https://id.example.test", Audience: resource, Algorithms: []string{"RS256", "HS256"}}, `"HS256" is not an asymmetric`},
		{"none", oauth.JWTOptions{Issuer: "https://id.example.test", Audience: resource, Algorithms: []string{"none"}}, `"none" is not an asymmetric`},
		{"bad claim path", oauth.JWTOptions{Issuer: "https://id.example.test", Audience: resource, RolesClaim: "realm_access..roles"}, "empty segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := oauth.NewJWTVerifier(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "oauth: ") {
				t.Errorf("err = %v, want oauth: ...%s...", err, tc.want)
			}
		})
	}
}

// A verified token is reused from the cache, but never past its "exp"
// (a negative Leeway allows no clock skew).
func TestJWTCacheBoundedByExpiry(t *testing.T) {
	op := oidctest.Start(t, oidctest.Client{ID: "quick", Secret: "quick-secret", Audience: []string{resource}, Lifetime: 2 * time.Second})
	v := newJWTVerifier(t, op, oauth.JWTOptions{CacheTTL: time.Hour, Leeway: -1})
	tok := op.Token(t, "quick")
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	if _, err := v.Verify(context.Background(), tok, nil); !errors.Is(err, server.ErrInvalidToken) {
		t.Fatalf("Verify after exp = %v, want ErrInvalidToken", err)
	}
}

// The allow-list is the package's own: extending DefaultAlgorithms lets
// no symmetric algorithm in.
func TestDefaultAlgorithmsIsACopy(t *testing.T) {
	saved := slices.Clone(oauth.DefaultAlgorithms)
	t.Cleanup(func() { oauth.DefaultAlgorithms = saved })
	oauth.DefaultAlgorithms = append(oauth.DefaultAlgorithms, "HS256")
	_, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: "https://id.example.test", Audience: resource, Algorithms: []string{"HS256"}})
	if err == nil || !strings.Contains(err.Error(), `"HS256" is not an asymmetric`) {
		t.Errorf("HS256 after extending DefaultAlgorithms: err = %v", err)
	}
}

// TestJWTRecoversFromIssuerOutage: a verifier that starts while its
// issuer is down tries again in the background, backing off (a few
// requests in seconds, one at a time, never a flood), and verifies
// within seconds of the issuer's return, with no request or probe
// needed to notice it.
func TestJWTRecoversFromIssuerOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the backoff")
	}
	// The issuer's address answers 503 while it is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	var asked, inFlight, maxInFlight atomic.Int32
	down := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := maxInFlight.Load(); n > m && !maxInFlight.CompareAndSwap(m, n); m = maxInFlight.Load() {
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
	})}
	go down.Serve(ln)

	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: "http://" + addr, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	if err := v.Ready(context.Background()); err == nil {
		t.Fatal("ready while the issuer is down")
	}
	const outage = 3500 * time.Millisecond
	time.Sleep(outage)
	down.Close()
	// Tries at about 0, 1 and 3 s; each asks the two discovery paths.
	if n := asked.Load(); n < 4 || n > 8 {
		t.Errorf("%d requests to the issuer in %v of outage, want 4 to 8 (a retry every 1, 2, 4 s)", n, outage)
	}
	if m := maxInFlight.Load(); m > 1 {
		t.Errorf("%d requests in flight at once, want 1", m)
	}

	op := oidctest.StartAt(t, addr, oidctest.Client{ID: "svc", Secret: "svc-secret", Audience: []string{resource}})
	back := time.Now()
	deadline := back.Add(10 * time.Second)
	for v.Ready(context.Background()) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("not ready 10 s after the issuer came back")
		}
		time.Sleep(50 * time.Millisecond) // polls the state only: Ready starts no fetch within the backoff
	}
	t.Logf("ready %v after the issuer came back (%d requests during the %v outage)", time.Since(back).Round(10*time.Millisecond), asked.Load(), outage)
	if _, err := v.Verify(context.Background(), op.Token(t, "svc"), nil); err != nil {
		t.Errorf("a token after the recovery: %v", err)
	}
}
