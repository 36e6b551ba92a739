package oidctest

import (
	"crypto/rsa"
	"testing"

	"github.com/toolroute/toolroute/authz/oauth/devidp"
)

// Client is a client of the provider (see [devidp.Client]).
type Client = devidp.Client

// Provider is a running OpenID provider. Create it with [Start].
type Provider struct {
	// Issuer is its issuer identifier, "http://127.0.0.1:PORT".
	Issuer string
	p      *devidp.Provider
}

// Dev returns the provider itself, for what this package does not wrap.
func (p *Provider) Dev() *devidp.Provider { return p.p }

// Start starts a provider for clients on 127.0.0.1, stopped at the end
// of the test.
func Start(tb testing.TB, clients ...Client) *Provider {
	tb.Helper()
	return StartAt(tb, "127.0.0.1:0", clients...)
}

// StartAt is [Start] on the loopback address addr: a test of an outage
// starts the provider where its clients already look for it.
func StartAt(tb testing.TB, addr string, clients ...Client) *Provider {
	tb.Helper()
	p, err := devidp.Start(addr, devidp.Options{Clients: clients})
	if err != nil {
		tb.Fatalf("oidctest: %v", err)
	}
	tb.Cleanup(func() {
		if err := p.Close(); err != nil {
			tb.Errorf("oidctest: %v", err)
		}
	})
	return &Provider{Issuer: p.Issuer(), p: p}
}

// Revoke revokes token at the revocation endpoint, as the client id
// whose token it is.
func (p *Provider) Revoke(tb testing.TB, id, token string) {
	tb.Helper()
	if err := p.p.Revoke(tb.Context(), id, token); err != nil {
		tb.Fatalf("oidctest: %v", err)
	}
}

// Stop stops the provider: from now on it cannot be reached.
func (p *Provider) Stop() {
	p.p.Close()
}

// Requests returns how many requests reached path ("/oauth/token",
// "/keys", "/.well-known/openid-configuration", "/oauth/introspect").
func (p *Provider) Requests(path string) int { return p.p.Requests(path) }

// Token returns an access token for the client id from the token
// endpoint (client credentials grant), as a machine client gets one.
func (p *Provider) Token(tb testing.TB, id string) string {
	tb.Helper()
	return p.Mint(tb, id, devidp.TokenOptions{})
}

// Mint returns an access token for the client id with the subject, roles
// and audience opts name (the client must have Mint).
func (p *Provider) Mint(tb testing.TB, id string, opts devidp.TokenOptions) string {
	tb.Helper()
	tok, err := p.p.Token(tb.Context(), id, opts)
	if err != nil {
		tb.Fatalf("oidctest: token request for %q: %v", id, err)
	}
	return tok
}

// Rotate makes a new signing key current. The key set publishes it
// beside the previous ones (as a provider rotating its keys does).
func (p *Provider) Rotate() {
	if err := p.p.Rotate(); err != nil {
		panic(err)
	}
}

// Sign signs claims with the provider's current key (its "kid" in the
// header), for tests of claims the provider would not issue (a foreign
// issuer signed with the right key).
func (p *Provider) Sign(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	s, err := p.p.Sign(claims)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// PublicKey returns the current signing key's public key.
func (p *Provider) PublicKey() *rsa.PublicKey { return p.p.PublicKey() }
