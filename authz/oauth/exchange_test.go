package oauth_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server"
)

func newExchanger(t testing.TB, op *oidctest.Provider, opts oauth.ExchangeOptions) *oauth.Exchanger {
	t.Helper()
	opts.Issuer = op.Issuer
	if opts.ClientID == "" {
		opts.ClientID, opts.ClientSecret = "toolroute", serverSecret
	}
	opts.Audience = upstreamAudience
	x, err := oauth.NewExchanger(opts)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// exchangeSetup serves the test tools with JWT verification and the
// upstream transport exchanging tokens; the upstream accepts only
// tokens of the provider for its own audience.
func exchangeSetup(t *testing.T, opts oauth.ExchangeOptions) (*oidctest.Provider, *upstream, string) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	up := startUpstream(t, newJWTVerifier(t, op, oauth.JWTOptions{Audience: upstreamAudience}).Verify)
	x := newExchanger(t, op, opts)
	return op, up, mcpServer(t, v.Verify, up.URL, x.Transport(nil), server.HTTPServerOptions{})
}

// The upstream receives a token exchanged for its audience, with the
// caller's identity, and never the client's token; one exchange per
// subject and token lifetime.
func TestExchangeUpstreamGetsExchangedToken(t *testing.T) {
	op, up, url := exchangeSetup(t, oauth.ExchangeOptions{})
	carol, bob := op.Token(t, "carol"), op.Token(t, "bob")
	tokenRequests := op.Requests("/oauth/token")
	for _, name := range []string{"list_items", "add_item", "delete_item"} {
		var out upstreamOut
		res := callTool(t, url, carol, name, map[string]any{"id": "7"}, &out)
		if res.IsError || out != (upstreamOut{Status: 200, Subject: "carol"}) {
			t.Fatalf("%s as carol: %+v %+v", name, res.Content, out)
		}
	}
	var out upstreamOut
	callTool(t, url, bob, "list_items", nil, &out)
	if out != (upstreamOut{Status: 200, Subject: "bob"}) {
		t.Fatalf("list_items as bob: %+v", out)
	}
	if n := op.Requests("/oauth/token") - tokenRequests; n != 2 {
		t.Errorf("%d token exchanges for 4 calls of 2 subjects, want 2", n)
	}
	seen := up.seen()
	if len(seen) != 4 {
		t.Fatalf("upstream saw %d requests, want 4", len(seen))
	}
	for _, b := range seen {
		if b == carol || b == bob || b == "" {
			t.Fatalf("the upstream received the client's token (or none)")
		}
	}
	if seen[0] != seen[1] || seen[0] == seen[3] {
		t.Errorf("carol's exchanged token was not reused, or bob got carol's")
	}
}

// A caller's calls arriving together make one exchange; an expired
// cached token is exchanged anew.
func TestExchangeCache(t *testing.T) {
	op := startOP(t)
	x := newExchanger(t, op, oauth.ExchangeOptions{RefreshBefore: 298 * time.Second}) // tokens live 300 s
	c := authz.Caller{Subject: "carol", Bearer: op.Token(t, "carol")}
	before := op.Requests("/oauth/token")
	var wg sync.WaitGroup
	tokens := make([]string, 8)
	errs := make([]error, 8)
	for i := range tokens {
		wg.Go(func() { tokens[i], errs[i] = x.Token(context.Background(), c) })
	}
	wg.Wait()
	for i := range tokens {
		if errs[i] != nil || tokens[i] != tokens[0] {
			t.Fatalf("Token %d = %q, %v", i, tokens[i], errs[i])
		}
	}
	if n := op.Requests("/oauth/token") - before; n != 1 {
		t.Errorf("%d exchanges for 8 concurrent calls, want 1", n)
	}
	time.Sleep(2100 * time.Millisecond)
	again, err := x.Token(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	if n := op.Requests("/oauth/token") - before; n != 2 || again == tokens[0] {
		t.Errorf("%d exchanges after the cached token's refresh time, want 2 and a new token", n)
	}
}

// A call that missed the cache just before another call's exchange
// stored its token gets that token: it exchanges nothing itself.
func TestExchangeMissJustBeforeStore(t *testing.T) {
	op := startOP(t)
	x := newExchanger(t, op, oauth.ExchangeOptions{})
	c := authz.Caller{Subject: "carol", Bearer: op.Token(t, "carol")}
	before := op.Requests("/oauth/token")
	missed, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	oauth.SetExchangeMissedHook(t, func() {
		if first.CompareAndSwap(false, true) {
			close(missed) // the late call has missed the cache
			<-release     // and waits until the other call has stored its token
		}
	})
	var late string
	var lateErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		late, lateErr = x.Token(context.Background(), c)
	}()
	<-missed
	tok, err := x.Token(context.Background(), c)
	close(release)
	<-done
	if err != nil || lateErr != nil {
		t.Fatal(err, lateErr)
	}
	if late != tok {
		t.Error("the late call got a token of its own")
	}
	if n := op.Requests("/oauth/token") - before; n != 1 {
		t.Errorf("%d exchanges, want 1", n)
	}
}

// A refused exchange and an unreachable provider send nothing upstream;
// the client sees the fixed texts.
func TestExchangeFailures(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		// alice's client may not exchange tokens.
		op, up, url := exchangeSetup(t, oauth.ExchangeOptions{ClientID: "alice", ClientSecret: "alice-secret"})
		res := callTool(t, url, op.Token(t, "carol"), "list_items", nil, nil)
		if !res.IsError || !strings.Contains(textOf(res), "not authenticated") {
			t.Errorf("got %v, want the error \"not authenticated\"", textOf(res))
		}
		if len(up.seen()) != 0 {
			t.Error("a request reached the upstream")
		}
	})
	t.Run("provider down", func(t *testing.T) {
		op, up, url := exchangeSetup(t, oauth.ExchangeOptions{})
		carol := op.Token(t, "carol")
		callTool(t, url, carol, "whoami", nil, nil) // the keys are held now
		op.Stop()
		res := callTool(t, url, carol, "list_items", nil, nil)
		if !res.IsError || !strings.Contains(textOf(res), "authorization service unavailable") {
			t.Errorf("got %v, want the error \"authorization service unavailable\"", textOf(res))
		}
		if len(up.seen()) != 0 {
			t.Error("a request reached the upstream")
		}
	})
	t.Run("no caller", func(t *testing.T) {
		op := startOP(t)
		x := newExchanger(t, op, oauth.ExchangeOptions{})
		_, err := x.Token(context.Background(), authz.Caller{Subject: "carol"})
		var unauth *authz.UnauthenticatedError
		if !errors.As(err, &unauth) {
			t.Errorf("Token without a bearer = %v, want an UnauthenticatedError", err)
		}
	})
}

// WithoutBearer sends upstream requests with no token at all.
func TestWithoutBearer(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	var got []string
	up := startUpstream(t, func(_ context.Context, tok string, _ *http.Request) (authz.Caller, error) {
		got = append(got, tok)
		return authz.Caller{Subject: "anyone"}, nil
	})
	url := mcpServer(t, v.Verify, up.URL, oauth.WithoutBearer(nil), server.HTTPServerOptions{})
	var out upstreamOut
	callTool(t, url, op.Token(t, "alice"), "list_items", nil, &out)
	if diff := cmp.Diff([]string{""}, got); diff != "" || out.Status != 200 {
		t.Errorf("upstream bearers (-want +got):\n%s (status %d)", diff, out.Status)
	}
}
