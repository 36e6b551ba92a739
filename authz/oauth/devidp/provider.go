package devidp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// The scopes a [Client] with Mint asks for its token's subject, roles and
// audience with, each followed by its value: "sub:alice role:editor
// role:viewer aud:https://tools.example.com/mcp". A token request names
// at most one subject, and any number of roles and audiences; every
// value is a non-empty OAuth scope token (no space, '"' or '\').
const (
	// ScopeSubject names the token's subject ("sub"). Without it the
	// subject is the client's ID.
	ScopeSubject = "sub:"
	// ScopeRole names one of the token's roles, written to the claim
	// [Options].RolesClaim names. Without any, the token carries the
	// client's Claims only.
	ScopeRole = "role:"
	// ScopeAudience names one of the token's audiences ("aud"). Without
	// any, the audience is the client's Audience.
	ScopeAudience = "aud:"
)

// The provider's endpoints, relative to its issuer.
const (
	DiscoveryPath     = "/.well-known/openid-configuration"
	TokenPath         = "/oauth/token"
	IntrospectionPath = "/oauth/introspect"
	RevocationPath    = "/revoke"
	KeysPath          = "/keys"
)

// Client is a client of the provider, with its credentials and what its
// client-credentials tokens say. Without Mint, a client stands for one
// user: its tokens have its ID as their subject and carry its Claims.
type Client struct {
	// ID and Secret are its credentials (client_secret_basic or
	// client_secret_post). Both are required. ID is the subject of its
	// tokens, unless it mints them.
	ID, Secret string
	// Audience is the "aud" of its client-credentials tokens. Empty, op
	// sets the client's ID.
	Audience []string
	// Claims are added to its tokens (and to their introspection):
	// {"roles": []string{"viewer"}}, {"realm_access": ...}.
	Claims map[string]any
	// Opaque selects opaque access tokens (for introspection) instead of
	// JWTs.
	Opaque bool
	// Lifetime is its tokens' lifetime. 0 selects 5 minutes; a negative
	// value issues tokens that have already expired.
	Lifetime time.Duration
	// NotBefore, if positive, issues tokens valid only that much later
	// ("nbf" and "iat" in the future).
	NotBefore time.Duration
	// Exchange lets it exchange tokens (RFC 8693) and introspect them.
	Exchange bool
	// Mint lets it name its token's subject, roles and audience in the
	// scope of its token request ([ScopeSubject], [ScopeRole],
	// [ScopeAudience]): the development stand-in for users logging in.
	// A client without Mint asking for these scopes is refused
	// (invalid_scope).
	Mint bool
}

// Options configures a [Provider]. The zero value is a provider without
// clients on a loopback address.
type Options struct {
	// Clients are the provider's clients. Their IDs must be distinct.
	Clients []Client
	// Issuer is the provider's issuer identifier: an http(s) URL with no
	// path, at which its clients reach it. "" selects "http://" and the
	// listener's address ("http://127.0.0.1:9400").
	Issuer string
	// RolesClaim is the claim minted roles ([ScopeRole]) are written to:
	// a claim name ("roles", "groups"), a dotted path that nests objects
	// ("realm_access.roles"), or "scope" (one space-separated string). It
	// is what a resource server's roles claim names. "" selects "roles".
	RolesClaim string
	// AllowNonLoopback lets the provider listen on an address that is not
	// a loopback address. Its keys and its clients' secrets are known to
	// whoever started it: only set this on a network you trust entirely
	// (a container network of one developer's machine).
	AllowNonLoopback bool
	// Logger receives a line per issued token (client, subject, roles,
	// audience, expiry; never the token) and the OpenID provider's own
	// reports. nil discards them.
	Logger *slog.Logger
}

// Provider is a running development OpenID provider. It must be created
// with [Start], is safe for concurrent use, and must be closed.
type Provider struct {
	issuer string
	st     *storage
	srv    *http.Server
	hc     *http.Client // for Token and Revoke

	served    chan struct{} // closed when Serve returns
	serveErr  error         // why Serve returned; set before served is closed
	closeOnce sync.Once

	mu       sync.Mutex
	requests map[string]int // by path
}

// Start starts a provider listening on addr ("127.0.0.1:9400",
// "127.0.0.1:0" for any free port, "localhost:9400"). It refuses an
// address that is not on loopback (":9400", "0.0.0.0:9400",
// "192.168.1.5:9400") unless opts.AllowNonLoopback is set, and invalid
// opts (a client without an ID or a secret, two clients of one ID, a
// malformed Issuer or RolesClaim).
func Start(addr string, opts Options) (*Provider, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if !opts.AllowNonLoopback {
		if err := checkLoopback(addr); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("devidp: %w", err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !opts.AllowNonLoopback && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return nil, fmt.Errorf("devidp: address %q listens on %s, which is not a loopback address: %s", addr, ln.Addr(), loopbackRule)
	}
	p, err := serve(ln, opts)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return p, nil
}

// loopbackRule says why a non-loopback address is refused and what to do.
const loopbackRule = "a development provider's keys and client secrets are known, so it listens on 127.0.0.1, [::1] or localhost unless non-loopback addresses are allowed explicitly"

// checkLoopback refuses an address whose host is missing (every
// interface) or an IP address off loopback. Host names are checked on
// the listener, once resolved.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("devidp: address %q: %v: want HOST:PORT, e.g. 127.0.0.1:9400", addr, err)
	}
	if host == "" {
		return fmt.Errorf("devidp: address %q listens on every interface: %s", addr, loopbackRule)
	}
	if ip := net.ParseIP(host); ip != nil && !ip.IsLoopback() {
		return fmt.Errorf("devidp: address %q is not a loopback address: %s", addr, loopbackRule)
	}
	return nil
}

// check refuses invalid options.
func (o Options) check() error {
	seen := map[string]bool{}
	for i, c := range o.Clients {
		switch {
		case c.ID == "":
			return fmt.Errorf("devidp: Options.Clients[%d] has no ID", i)
		case c.Secret == "":
			return fmt.Errorf("devidp: client %q has no Secret", c.ID)
		case seen[c.ID]:
			return fmt.Errorf("devidp: two clients have the ID %q", c.ID)
		}
		seen[c.ID] = true
	}
	if o.Issuer != "" {
		if err := checkIssuer(o.Issuer); err != nil {
			return fmt.Errorf("devidp: Options.Issuer %v", err)
		}
	}
	if o.RolesClaim != "" {
		if err := checkRolesClaim(o.RolesClaim); err != nil {
			return fmt.Errorf("devidp: Options.RolesClaim %v", err)
		}
	}
	return nil
}

// checkIssuer refuses an issuer other than an http(s) URL of a host
// alone (the endpoints are served at the root).
func checkIssuer(issuer string) error {
	u, err := url.Parse(issuer)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil ||
		(u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(issuer, "/") {
		return fmt.Errorf("%q is not an http(s) URL of a host alone, such as http://127.0.0.1:9400 or http://idp:9400", issuer)
	}
	return nil
}

// registered are the claims a token's issuer sets itself: roles written
// there would replace them or be lost.
var registered = []string{"iss", "sub", "aud", "exp", "nbf", "iat", "jti", "client_id", "azp", "act", "cnf"}

// checkRolesClaim refuses a roles claim path with empty segments or one
// in a registered claim.
func checkRolesClaim(path string) error {
	name := path
	if !strings.Contains(path, "://") {
		segs := strings.Split(path, ".")
		for _, seg := range segs {
			if seg == "" {
				return fmt.Errorf("%q has an empty segment: want a claim name (roles, groups, scope) or a dotted path (realm_access.roles)", path)
			}
		}
		name = segs[0]
	}
	for _, r := range registered {
		if name == r {
			return fmt.Errorf("%q is in the registered claim %q, which the provider sets itself: name another claim (roles, groups, realm_access.roles)", path, r)
		}
	}
	return nil
}

// serve starts the provider on ln.
func serve(ln net.Listener, opts Options) (*Provider, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	rolesClaim := opts.RolesClaim
	if rolesClaim == "" {
		rolesClaim = "roles"
	}
	issuer := opts.Issuer
	if issuer == "" {
		issuer = "http://" + ln.Addr().String()
	}
	st, err := newStorage(opts.Clients, rolesClaim, log)
	if err != nil {
		return nil, err
	}
	var cryptoKey [32]byte
	rand.Read(cryptoKey[:]) // never fails (crypto/rand)
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:      cryptoKey,
		CodeMethodS256: true,
		AuthMethodPost: true,
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("devidp: %w", err)
	}
	h := op.RegisterLegacyServer(op.NewLegacyServer(provider, *op.DefaultEndpoints), http.NotFound, op.WithFallbackLogger(log))
	p := &Provider{
		issuer:   issuer,
		st:       st,
		hc:       &http.Client{Timeout: 10 * time.Second},
		served:   make(chan struct{}),
		requests: map[string]int{},
	}
	p.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			p.mu.Lock()
			p.requests[r.URL.Path]++
			p.mu.Unlock()
			h.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	go func() {
		defer close(p.served)
		p.serveErr = p.srv.Serve(ln)
	}()
	return p, nil
}

// Issuer returns the provider's issuer identifier, at which its discovery
// document is: "http://127.0.0.1:9400".
func (p *Provider) Issuer() string { return p.issuer }

// Close stops the provider at once: its listener and every connection are
// closed, and it cannot be reached any more. It reports why the provider
// had stopped serving, if it had stopped on its own. Closing twice is
// closing once.
func (p *Provider) Close() error {
	p.closeOnce.Do(func() { p.srv.Close() })
	<-p.served
	if p.serveErr == nil || errors.Is(p.serveErr, http.ErrServerClosed) {
		return nil
	}
	return fmt.Errorf("devidp: serving: %w", p.serveErr)
}

// Requests returns how many requests reached path ([TokenPath],
// [KeysPath], [DiscoveryPath], [IntrospectionPath], ...).
func (p *Provider) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[path]
}

// Token requests an access token for the client id at the provider's
// token endpoint (the client credentials grant, as [RequestToken] does
// from any process), with its secret. opts may name a subject, roles and
// audience for a client with Mint; the zero TokenOptions asks for the
// client's own token.
func (p *Provider) Token(ctx context.Context, id string, opts TokenOptions) (string, error) {
	c, ok := p.st.clients[id]
	if !ok {
		return "", fmt.Errorf("devidp: no client %q", id)
	}
	if opts.HTTPClient == nil {
		opts.HTTPClient = p.hc
	}
	return RequestToken(ctx, p.issuer, c.ID, c.Secret, opts)
}

// Revoke revokes token at the revocation endpoint (RFC 7009), as the
// client id whose token it is: its introspection answers inactive from
// then on. (A JWT stays valid until it expires: a resource server checks
// its signature, not the provider.)
func (p *Provider) Revoke(ctx context.Context, id, token string) error {
	c, ok := p.st.clients[id]
	if !ok {
		return fmt.Errorf("devidp: no client %q", id)
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	resp, err := postForm(ctx, p.hc, p.issuer+RevocationPath, c.ID, c.Secret, form)
	if err != nil {
		return fmt.Errorf("devidp: revocation: %w", err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("devidp: revocation at %s%s: %s", p.issuer, RevocationPath, resp.Status)
	}
	return nil
}

// Rotate makes a new signing key current. The key set publishes it
// beside the previous ones, as a provider rotating its keys does: tokens
// signed before still verify.
func (p *Provider) Rotate() error { return p.st.rotate() }

// Sign signs claims with the provider's current key (its "kid" in the
// header) as a JWT, whatever they say: for tests of tokens the provider
// would not issue (a foreign issuer signed with the right key, a missing
// "sub").
func (p *Provider) Sign(claims map[string]any) (string, error) {
	k := p.st.current()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.id}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		return "", fmt.Errorf("devidp: %w", err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		return "", fmt.Errorf("devidp: claims: %w", err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("devidp: %w", err)
	}
	return jws.CompactSerialize()
}

// PublicKey returns the current signing key's public key.
func (p *Provider) PublicKey() *rsa.PublicKey { return &p.st.current().key.PublicKey }
