package oauth_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server"
)

func newIntrospection(t *testing.T, op *oidctest.Provider, opts oauth.IntrospectionOptions) *oauth.IntrospectionVerifier {
	t.Helper()
	opts.URL = op.Issuer + "/oauth/introspect"
	if opts.ClientID == "" {
		opts.ClientID, opts.ClientSecret = "toolroute", serverSecret
	}
	opts.Audience = resource
	opts.Issuer = op.Issuer
	v, err := oauth.NewIntrospectionVerifier(opts)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// An opaque token is verified by introspection, and its roles decide the
// tools; answers are cached.
func TestIntrospection(t *testing.T) {
	op := startOP(t)
	v := newIntrospection(t, op, oauth.IntrospectionOptions{})
	tok := op.Token(t, "olivia")
	if strings.Count(tok, ".") == 2 {
		t.Fatalf("olivia's token looks like a JWT: %s", tok)
	}
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	if diff := cmp.Diff([]string{"add_item", "list_items", "whoami"}, toolNames(t, url, tok)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	n := op.Requests("/oauth/introspect")
	if n < 1 {
		t.Fatalf("%d introspection requests", n)
	}
	for range 3 {
		c, err := v.Verify(context.Background(), tok, nil)
		if err != nil || c.Subject != "olivia" || c.Bearer != tok || c.Client != "olivia" || !slices.Contains(c.Scopes, "openid") {
			t.Fatalf("Verify = %v, %v; want olivia, with the scopes granted (openid)", c, err)
		}
	}
	if got := op.Requests("/oauth/introspect"); got != n {
		t.Errorf("%d introspection requests after cached verifications, want %d", got, n)
	}
	// A JWT of another audience is refused by the audience check.
	if _, err := v.Verify(context.Background(), op.Token(t, "mallory"), nil); !errors.Is(err, server.ErrInvalidToken) || !strings.Contains(err.Error(), "audience") {
		t.Errorf("foreign audience: %v", err)
	}
}

// An inactive (revoked) token gets 401 with invalid_token.
func TestIntrospectionInactive(t *testing.T) {
	op := startOP(t)
	v := newIntrospection(t, op, oauth.IntrospectionOptions{})
	tok := op.Token(t, "olivia")
	op.Revoke(t, "olivia", tok)
	_, err := v.Verify(context.Background(), tok, nil)
	if !errors.Is(err, server.ErrInvalidToken) || !strings.Contains(err.Error(), "not active") {
		t.Fatalf("Verify = %v, want ErrInvalidToken: not active", err)
	}
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	checkChallenge(t, post(t, url, "Bearer "+tok), "invalid_token")
	checkChallenge(t, post(t, url, "Bearer no-such-token"), "invalid_token")
}

// A token valid only later is refused.
func TestIntrospectionNotYetValid(t *testing.T) {
	op := oidctest.Start(t,
		oidctest.Client{ID: "early", Secret: "early-secret", Audience: []string{resource}, Opaque: true, NotBefore: 10 * time.Minute},
		oidctest.Client{ID: "toolroute", Secret: serverSecret})
	v := newIntrospection(t, op, oauth.IntrospectionOptions{})
	if _, err := v.Verify(context.Background(), op.Token(t, "early"), nil); !errors.Is(err, server.ErrInvalidToken) || !strings.Contains(err.Error(), "not valid yet") {
		t.Fatalf("Verify = %v, want ErrInvalidToken: not valid yet", err)
	}
}

// A cached answer is not reused past the token's expiry.
func TestIntrospectionCacheBoundedByExpiry(t *testing.T) {
	op := oidctest.Start(t,
		oidctest.Client{ID: "quick", Secret: "quick-secret", Audience: []string{resource}, Opaque: true, Lifetime: 3 * time.Second},
		oidctest.Client{ID: "toolroute", Secret: serverSecret, Exchange: true})
	v := newIntrospection(t, op, oauth.IntrospectionOptions{CacheTTL: time.Hour})
	tok := op.Token(t, "quick")
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), tok, nil); err != nil {
		t.Fatal(err)
	}
	if n := op.Requests("/oauth/introspect"); n != 1 {
		t.Fatalf("%d introspection requests, want 1", n)
	}
	time.Sleep(3100 * time.Millisecond)
	if _, err := v.Verify(context.Background(), tok, nil); !errors.Is(err, server.ErrInvalidToken) {
		t.Fatalf("expired token: %v, want ErrInvalidToken", err)
	}
	if n := op.Requests("/oauth/introspect"); n != 2 {
		t.Errorf("%d introspection requests, want 2 (the cache ends at exp)", n)
	}
}

// An unreachable endpoint, or one refusing this server's credentials, is
// an outage: 503, not ready.
func TestIntrospectionOutage(t *testing.T) {
	op := startOP(t)
	tok := op.Token(t, "olivia")
	bad := newIntrospection(t, op, oauth.IntrospectionOptions{ClientID: "toolroute", ClientSecret: "wrong"})
	_, err := bad.Verify(context.Background(), tok, nil)
	var outage *authz.OutageError
	if !errors.As(err, &outage) || !strings.Contains(outage.Err.Error(), "refuses this server's client credentials") {
		t.Errorf("wrong credentials: %v", err)
	}

	v := newIntrospection(t, op, oauth.IntrospectionOptions{})
	op.Stop()
	if _, err := v.Verify(context.Background(), tok, nil); !errors.As(err, &outage) {
		t.Fatalf("provider down: %v, want an OutageError", err)
	}
	if strings.Contains(outage.Err.Error(), tok) {
		t.Errorf("the error holds the token: %v", outage.Err)
	}
	if v.Ready(context.Background()) == nil {
		t.Error("ready while the endpoint is down")
	}
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	resp := post(t, url, "Bearer "+tok)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("got %s %q, want 503", resp.Status, body)
	}
}

// An unready verifier probes the endpoint, and is ready again once it
// answers, without any request to verify.
func TestIntrospectionReadyAgain(t *testing.T) {
	op := startOP(t)
	var failing atomic.Bool
	failing.Store(true)
	target, _ := neturl.Parse(op.Issuer)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			http.Error(w, "down for maintenance", http.StatusServiceUnavailable)
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{URL: proxy.URL + "/oauth/introspect", ClientID: "toolroute", ClientSecret: serverSecret, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	var outage *authz.OutageError
	if _, err := v.Verify(context.Background(), op.Token(t, "olivia"), nil); !errors.As(err, &outage) {
		t.Fatalf("Verify = %v, want an OutageError", err)
	}
	if v.Ready(context.Background()) == nil {
		t.Fatal("ready after an outage")
	}
	failing.Store(false)
	before := op.Requests("/oauth/introspect")
	for range 500 { // a bound against a hang, not a timing assertion
		if v.Ready(context.Background()) == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := v.Ready(context.Background()); err != nil {
		t.Fatal("not ready again after the endpoint came back")
	}
	if op.Requests("/oauth/introspect") == before {
		t.Error("ready again without asking the endpoint")
	}
}
