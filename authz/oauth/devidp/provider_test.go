package devidp_test

import (
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/oauth/devidp"
)

const (
	resource = "http://127.0.0.1:8080/mcp"
	upstream = "http://catalog.example.test"
)

// start starts a provider on 127.0.0.1 with a minting client "dev" and a
// user client "alice", closed at the end of the test.
func start(t *testing.T, opts devidp.Options) *devidp.Provider {
	t.Helper()
	opts.Clients = append(opts.Clients,
		devidp.Client{ID: "dev", Secret: "dev-secret", Audience: []string{resource}, Mint: true, Exchange: true},
		devidp.Client{ID: "alice", Secret: "alice-secret", Audience: []string{resource}, Claims: map[string]any{"roles": []string{"viewer"}}},
	)
	p, err := devidp.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}

// verify verifies token with authz/oauth's JWT verifier, as a service
// of audience aud reading roles at rolesClaim does.
func verify(t *testing.T, issuer, aud, rolesClaim, token string) (authz.Caller, error) {
	t.Helper()
	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: issuer, Audience: aud, RolesClaim: rolesClaim, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	return v.Verify(t.Context(), token, nil)
}

// who is what a test checks of a caller.
type who struct {
	Subject, Client string
	Roles           []string
}

func whoOf(c authz.Caller) who { return who{Subject: c.Subject, Client: c.Client, Roles: c.Roles} }

// TestMint: a Mint client's token has the subject and exactly the roles
// it asked for, which the real verifier reads; the client's own token
// (no minting scopes) is its own.
func TestMint(t *testing.T) {
	p := start(t, devidp.Options{})
	for _, tt := range []struct {
		name string
		opts devidp.TokenOptions
		want who
	}{
		{"editor", devidp.TokenOptions{Subject: "bob", Roles: []string{"editor"}}, who{"bob", "dev", []string{"editor"}}},
		{"viewer only", devidp.TokenOptions{Subject: "bob", Roles: []string{"viewer"}}, who{"bob", "dev", []string{"viewer"}}},
		{"two roles", devidp.TokenOptions{Subject: "carol", Roles: []string{"viewer", "admin"}}, who{"carol", "dev", []string{"viewer", "admin"}}},
		{"no roles", devidp.TokenOptions{Subject: "dave"}, who{"dave", "dev", nil}},
		{"own token", devidp.TokenOptions{}, who{"dev", "dev", nil}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := p.Token(t.Context(), "dev", tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			c, err := verify(t, p.Issuer(), resource, "", tok)
			if err != nil {
				t.Fatal(err)
			}
			got := whoOf(c)
			if len(got.Roles) == 0 {
				got.Roles = nil
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("caller (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMintRolesClaim: minted roles land where Options.RolesClaim says,
// in the shape identity providers give that claim (a dotted path nests
// objects, as Keycloak's realm_access.roles; "scope" is one string), and
// the verifier reading that claim finds them.
func TestMintRolesClaim(t *testing.T) {
	roles := []any{"editor", "viewer"}
	for _, tt := range []struct {
		claim string
		want  map[string]any // the token's claims at the path's first segment
	}{
		{"roles", map[string]any{"roles": roles}},
		{"groups", map[string]any{"groups": roles}},
		{"realm_access.roles", map[string]any{"realm_access": map[string]any{"roles": roles}}},
		{"scope", map[string]any{"scope": "editor viewer"}},
		{"https://example.test/roles", map[string]any{"https://example.test/roles": roles}},
	} {
		claim := tt.claim
		t.Run(claim, func(t *testing.T) {
			p := start(t, devidp.Options{RolesClaim: claim})
			tok, err := p.Token(t.Context(), "dev", devidp.TokenOptions{Subject: "erin", Roles: []string{"editor", "viewer"}})
			if err != nil {
				t.Fatal(err)
			}
			got := payload(t, tok)
			for k := range tt.want {
				if diff := cmp.Diff(tt.want[k], got[k]); diff != "" {
					t.Errorf("claim %q (-want +got):\n%s", k, diff)
				}
			}
			c, err := verify(t, p.Issuer(), resource, claim, tok)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(c.Roles, []string{"editor", "viewer"}) {
				t.Errorf("roles at %q = %q, want [editor viewer]", claim, c.Roles)
			}
			if claim != "roles" {
				if c, err := verify(t, p.Issuer(), resource, "roles", tok); err != nil || len(c.Roles) != 0 {
					t.Errorf("roles at \"roles\" = %q, %v; want none: they belong at %q", c.Roles, err, claim)
				}
			}
		})
	}
}

// TestMintAudience: an aud: scope replaces the client's audience, so the
// token is for that service and refused by the client's default one.
func TestMintAudience(t *testing.T) {
	p := start(t, devidp.Options{})
	tok, err := p.Token(t.Context(), "dev", devidp.TokenOptions{Subject: "bob", Roles: []string{"editor"}, Audience: []string{upstream}})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := verify(t, p.Issuer(), upstream, "", tok); err != nil || c.Subject != "bob" {
		t.Errorf("for %s: %v, %v; want bob", upstream, c, err)
	}
	if _, err := verify(t, p.Issuer(), resource, "", tok); err == nil {
		t.Errorf("for %s: verified, want refused: the token is for %s", resource, upstream)
	}
}

// TestMintNeedsMint: a client without Mint cannot name a subject or
// roles, and gets no token rather than one that lacks them.
func TestMintNeedsMint(t *testing.T) {
	p := start(t, devidp.Options{})
	for _, opts := range []devidp.TokenOptions{{Roles: []string{"admin"}}, {Subject: "bob"}, {Audience: []string{upstream}}} {
		_, err := p.Token(t.Context(), "alice", opts)
		if err == nil || !strings.Contains(err.Error(), "invalid_scope") || !strings.Contains(err.Error(), "not a Mint client") {
			t.Errorf("alice asking %+v: %v, want invalid_scope: not a Mint client", opts, err)
		}
	}
	tok, err := p.Token(t.Context(), "alice", devidp.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := verify(t, p.Issuer(), resource, "", tok); err != nil || c.Subject != "alice" || !slices.Equal(c.Roles, []string{"viewer"}) {
		t.Errorf("alice's own token: %v, %v; want alice [viewer]", c, err)
	}
}

// TestMintedExchangeAndIntrospection: a minted token is exchanged (RFC
// 8693) for another audience with its subject and roles, and an opaque
// minted one introspects with them.
func TestMintedExchangeAndIntrospection(t *testing.T) {
	p := start(t, devidp.Options{Clients: []devidp.Client{{ID: "opaque", Secret: "opaque-secret", Audience: []string{resource}, Opaque: true, Mint: true}}})
	tok, err := p.Token(t.Context(), "dev", devidp.TokenOptions{Subject: "bob", Roles: []string{"editor"}})
	if err != nil {
		t.Fatal(err)
	}
	caller, err := verify(t, p.Issuer(), resource, "", tok)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := oauth.NewExchanger(oauth.ExchangeOptions{Issuer: p.Issuer(), ClientID: "dev", ClientSecret: "dev-secret", Audience: upstream, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	exchanged, err := ex.Token(t.Context(), caller)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := verify(t, p.Issuer(), upstream, "", exchanged); err != nil || c.Subject != "bob" || !slices.Equal(c.Roles, []string{"editor"}) {
		t.Errorf("exchanged: %v, %v; want bob [editor] for %s", c, err, upstream)
	}

	opaque, err := p.Token(t.Context(), "opaque", devidp.TokenOptions{Subject: "carol", Roles: []string{"viewer"}})
	if err != nil {
		t.Fatal(err)
	}
	iv, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{
		URL: p.Issuer() + devidp.IntrospectionPath, ClientID: "dev", ClientSecret: "dev-secret",
		Audience: resource, Issuer: p.Issuer(), CacheTTL: -1, Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	c, err := iv.Verify(t.Context(), opaque, nil)
	if err != nil || whoOf(c).Subject != "carol" || !slices.Equal(c.Roles, []string{"viewer"}) {
		t.Errorf("introspected: %v, %v; want carol [viewer]", c, err)
	}
	if err := p.Revoke(t.Context(), "opaque", opaque); err != nil {
		t.Fatal(err)
	}
	if _, err := iv.Verify(t.Context(), opaque, nil); err == nil {
		t.Error("a revoked token still introspects as active")
	}
}

// TestStartRefuses: Start refuses addresses off loopback and invalid
// options, naming what is wrong.
func TestStartRefuses(t *testing.T) {
	client := devidp.Client{ID: "c", Secret: "s"}
	for _, tt := range []struct {
		name, addr string
		opts       devidp.Options
		want       string
	}{
		{"every interface", ":0", devidp.Options{}, `":0" listens on every interface`},
		{"unspecified IPv4", "0.0.0.0:0", devidp.Options{}, `"0.0.0.0:0" is not a loopback address`},
		{"unspecified IPv6", "[::]:0", devidp.Options{}, `"[::]:0" is not a loopback address`},
		{"another host", "192.0.2.1:9400", devidp.Options{}, `"192.0.2.1:9400" is not a loopback address`},
		{"no port", "127.0.0.1", devidp.Options{}, `want HOST:PORT`},
		{"client without ID", "127.0.0.1:0", devidp.Options{Clients: []devidp.Client{{Secret: "s"}}}, "Options.Clients[0] has no ID"},
		{"client without secret", "127.0.0.1:0", devidp.Options{Clients: []devidp.Client{{ID: "c"}}}, `client "c" has no Secret`},
		{"duplicate client", "127.0.0.1:0", devidp.Options{Clients: []devidp.Client{client, client}}, `two clients have the ID "c"`},
		{"issuer with a path", "127.0.0.1:0", devidp.Options{Issuer: "http://127.0.0.1:9400/realms/dev"}, "not an http(s) URL of a host alone"},
		{"issuer not http", "127.0.0.1:0", devidp.Options{Issuer: "ftp://idp"}, "not an http(s) URL of a host alone"},
		{"roles in sub", "127.0.0.1:0", devidp.Options{RolesClaim: "sub"}, `registered claim "sub"`},
		{"roles in aud", "127.0.0.1:0", devidp.Options{RolesClaim: "aud.roles"}, `registered claim "aud"`},
		{"empty segment", "127.0.0.1:0", devidp.Options{RolesClaim: "realm_access..roles"}, "empty segment"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p, err := devidp.Start(tt.addr, tt.opts)
			if err == nil {
				p.Close()
				t.Fatalf("Start(%q) started", tt.addr)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Start(%q) = %v, want %q", tt.addr, err, tt.want)
			}
		})
	}
	p, err := devidp.Start("localhost:0", devidp.Options{})
	if err != nil {
		t.Fatalf("localhost: %v", err)
	}
	p.Close()
}

// TestRequestTokenNoProvider: a token request with no provider at the
// issuer says so, and a closed provider is no longer there.
func TestRequestTokenNoProvider(t *testing.T) {
	p := start(t, devidp.Options{})
	if _, err := devidp.RequestToken(t.Context(), p.Issuer(), "dev", "dev-secret", devidp.TokenOptions{Roles: []string{"editor"}}); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	_, err := devidp.RequestToken(t.Context(), p.Issuer(), "dev", "dev-secret", devidp.TokenOptions{Roles: []string{"editor"}})
	if err == nil || !strings.Contains(err.Error(), "no OpenID provider answers at issuer "+p.Issuer()) {
		t.Errorf("after Close: %v, want no OpenID provider answers at issuer %s", err, p.Issuer())
	}
	if err != nil && strings.Contains(err.Error(), "dev-secret") {
		t.Errorf("the error holds the secret: %v", err)
	}
}

// TestRequestTokenRefused: a refusal is the provider's error and
// description, without the secret; a bad value is refused before asking.
func TestRequestTokenRefused(t *testing.T) {
	p := start(t, devidp.Options{})
	_, err := devidp.RequestToken(t.Context(), p.Issuer(), "dev", "wrong-secret", devidp.TokenOptions{})
	if err == nil || !strings.Contains(err.Error(), "invalid_client") || strings.Contains(err.Error(), "wrong-secret") {
		t.Errorf("wrong secret: %v, want invalid_client without the secret", err)
	}
	before := p.Requests(devidp.TokenPath)
	_, err = devidp.RequestToken(t.Context(), p.Issuer(), "dev", "dev-secret", devidp.TokenOptions{Roles: []string{"two words"}})
	if err == nil || !strings.Contains(err.Error(), `role "two words" holds ' '`) {
		t.Errorf("role with a space: %v", err)
	}
	if p.Requests(devidp.TokenPath) != before {
		t.Error("a role that cannot be a scope was sent")
	}
}

// TestRotateAndSign: tokens signed before a rotation still verify (the
// key set keeps the old key), and Sign signs with the current key.
func TestRotateAndSign(t *testing.T) {
	p := start(t, devidp.Options{})
	old, err := p.Token(t.Context(), "alice", devidp.TokenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	before := p.PublicKey()
	if err := p.Rotate(); err != nil {
		t.Fatal(err)
	}
	if p.PublicKey().Equal(before) {
		t.Fatal("Rotate kept the current key")
	}
	signed, err := p.Sign(map[string]any{"iss": p.Issuer(), "sub": "zoe", "aud": resource, "exp": 4102444800, "roles": []string{"admin"}})
	if err != nil {
		t.Fatal(err)
	}
	for name, tok := range map[string]string{"before the rotation": old, "signed after it": signed} {
		if _, err := verify(t, p.Issuer(), resource, "", tok); err != nil {
			t.Errorf("token %s: %v", name, err)
		}
	}
}

// payload returns the claims of the JWT tok, unverified.
func payload(t *testing.T, tok string) map[string]any {
	t.Helper()
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		t.Fatalf("not a JWT: %q", tok)
	}
	data, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims map[string]any
	if err := json.Unmarshal(data, &claims); err != nil {
		t.Fatal(err)
	}
	return claims
}

// deadIssuer returns the issuer URL of a loopback port nothing listens on.
func deadIssuer(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
