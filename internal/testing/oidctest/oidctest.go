package oidctest

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// quiet is the provider's logger: its reports would drown the tests'.
var quiet = slog.New(slog.DiscardHandler)

// Client is a client of the provider.
type Client struct {
	// ID and Secret are its credentials (client_secret_basic or
	// client_secret_post). ID is the subject of its tokens.
	ID, Secret string
	// Audience is the "aud" of its client-credentials tokens.
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
}

// Provider is a running OpenID provider. Create it with [Start].
type Provider struct {
	// Issuer is its issuer identifier, "http://127.0.0.1:PORT".
	Issuer string
	srv    *httptest.Server
	st     *storage

	mu       sync.Mutex
	requests map[string]int // by path
}

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
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		tb.Fatalf("oidctest: %v", err)
	}
	issuer := "http://" + ln.Addr().String()
	st := newStorage(clients)
	provider, err := op.NewProvider(&op.Config{
		CryptoKey:      sha256.Sum256([]byte("oidctest")),
		CodeMethodS256: true,
		AuthMethodPost: true,
	}, st, op.StaticIssuer(issuer), op.WithAllowInsecure(), op.WithLogger(quiet))
	if err != nil {
		ln.Close()
		tb.Fatalf("oidctest: %v", err)
	}
	h := op.RegisterLegacyServer(op.NewLegacyServer(provider, *op.DefaultEndpoints), http.NotFound, op.WithFallbackLogger(quiet))
	p := &Provider{Issuer: issuer, st: st, requests: map[string]int{}}
	p.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.requests[r.URL.Path]++
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	})}}
	p.srv.Start()
	tb.Cleanup(p.srv.Close)
	return p
}

// Revoke revokes token at the revocation endpoint, as the client id
// whose token it is.
func (p *Provider) Revoke(tb testing.TB, id, token string) {
	tb.Helper()
	resp := p.post(tb, "/revoke", id, url.Values{"token": {token}, "token_type_hint": {"access_token"}})
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		tb.Fatalf("oidctest: revocation: %s", resp.Status)
	}
}

// post posts form to path as the client id (client_secret_basic).
func (p *Provider) post(tb testing.TB, path, id string, form url.Values) *http.Response {
	tb.Helper()
	c, ok := p.st.clients[id]
	if !ok {
		tb.Fatalf("oidctest: no client %q", id)
	}
	req, err := http.NewRequest(http.MethodPost, p.Issuer+path, strings.NewReader(form.Encode()))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.ID), url.QueryEscape(c.Secret))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("oidctest: POST %s: %v", path, err)
	}
	return resp
}

// Stop stops the provider: from now on it cannot be reached.
func (p *Provider) Stop() {
	p.srv.CloseClientConnections()
	p.srv.Close()
}

// Requests returns how many requests reached path ("/oauth/token",
// "/keys", "/.well-known/openid-configuration", "/oauth/introspect").
func (p *Provider) Requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.requests[path]
}

// Token returns an access token for the client id from the token
// endpoint (client credentials grant), as a machine client gets one.
func (p *Provider) Token(tb testing.TB, id string) string {
	tb.Helper()
	resp := p.post(tb, "/oauth/token", id, url.Values{"grant_type": {"client_credentials"}, "scope": {"openid"}})
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || out.AccessToken == "" {
		tb.Fatalf("oidctest: token request for %q: %s: %v %s %s", id, resp.Status, err, out.Error, out.Description)
	}
	return out.AccessToken
}

// Rotate makes a new signing key current. The key set publishes it
// beside the previous ones (as a provider rotating its keys does).
func (p *Provider) Rotate() {
	p.st.mu.Lock()
	defer p.st.mu.Unlock()
	p.st.keys = append(p.st.keys, newKey())
}

// Sign signs claims with the provider's current key (its "kid" in the
// header), for tests of claims the provider would not issue (a foreign
// issuer signed with the right key).
func (p *Provider) Sign(tb testing.TB, claims map[string]any) string {
	tb.Helper()
	k := p.st.current()
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: jose.JSONWebKey{Key: k.key, KeyID: k.id}}, (&jose.SignerOptions{}).WithType("JWT"))
	if err != nil {
		tb.Fatal(err)
	}
	payload, err := json.Marshal(claims)
	if err != nil {
		tb.Fatal(err)
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// PublicKey returns the current signing key's public key.
func (p *Provider) PublicKey() *rsa.PublicKey { return &p.st.current().key.PublicKey }

// key is a signing key.
type key struct {
	id  string
	key *rsa.PrivateKey
}

func newKey() key {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		panic(err)
	}
	return key{id: rand.Text()[:12], key: k}
}

func (k key) SignatureAlgorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k key) Key() any                                    { return k.key }
func (k key) ID() string                                  { return k.id }

// publicKey is a key as the key set publishes it.
type publicKey struct{ key }

func (k publicKey) Algorithm() jose.SignatureAlgorithm { return jose.RS256 }
func (k publicKey) Use() string                        { return "sig" }
func (k publicKey) Key() any                           { return &k.key.key.PublicKey }

// token is an issued access token.
type token struct {
	subject  string
	clientID string
	audience []string
	scopes   []string
	claims   map[string]any
	nbf, exp time.Time
	revoked  bool
}

// storage is the provider's in-memory storage: op.Storage,
// op.ClientCredentialsStorage and op.TokenExchangeStorage.
type storage struct {
	clients map[string]Client

	mu     sync.Mutex
	keys   []key
	tokens map[string]*token
	seq    int
}

var (
	_ op.Storage                  = (*storage)(nil)
	_ op.ClientCredentialsStorage = (*storage)(nil)
	_ op.TokenExchangeStorage     = (*storage)(nil)
)

func newStorage(clients []Client) *storage {
	m := map[string]Client{}
	for _, c := range clients {
		m[c.ID] = c
	}
	return &storage{clients: m, keys: []key{newKey()}, tokens: map[string]*token{}}
}

func (s *storage) current() key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

var errNoCodeFlow = errors.New("oidctest: the authorization code flow is not provided")

func (s *storage) CreateAuthRequest(context.Context, *oidc.AuthRequest, string) (op.AuthRequest, error) {
	return nil, errNoCodeFlow
}
func (s *storage) AuthRequestByID(context.Context, string) (op.AuthRequest, error) {
	return nil, errNoCodeFlow
}
func (s *storage) AuthRequestByCode(context.Context, string) (op.AuthRequest, error) {
	return nil, errNoCodeFlow
}
func (s *storage) SaveAuthCode(context.Context, string, string) error { return errNoCodeFlow }
func (s *storage) DeleteAuthRequest(context.Context, string) error    { return errNoCodeFlow }

// tokenRequest is a client-credentials token request.
type tokenRequest struct {
	subject  string
	audience []string
	scopes   []string
}

func (r *tokenRequest) GetSubject() string    { return r.subject }
func (r *tokenRequest) GetAudience() []string { return r.audience }
func (r *tokenRequest) GetScopes() []string   { return r.scopes }

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	var clientID string
	var claims map[string]any
	switch r := req.(type) {
	case *tokenRequest:
		clientID = r.subject
		claims = s.clients[clientID].Claims
	case op.TokenExchangeRequest:
		clientID = r.GetClientID()
		claims = r.GetExchangeSubjectTokenClaims()
	default:
		return "", time.Time{}, fmt.Errorf("oidctest: token request %T not provided", req)
	}
	lifetime := s.clients[clientID].Lifetime
	if lifetime == 0 {
		lifetime = 5 * time.Minute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	id := fmt.Sprintf("t%d", s.seq)
	now := time.Now()
	t := &token{subject: req.GetSubject(), clientID: clientID, audience: req.GetAudience(), scopes: req.GetScopes(), claims: maps.Clone(claims),
		nbf: now.Add(s.clients[clientID].NotBefore), exp: now.Add(lifetime)}
	s.tokens[id] = t
	return id, t.exp, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("oidctest: refresh tokens are not provided")
}
func (s *storage) TokenRequestByRefreshToken(context.Context, string) (op.RefreshTokenRequest, error) {
	return nil, op.ErrInvalidRefreshToken
}
func (s *storage) TerminateSession(context.Context, string, string) error { return nil }

func (s *storage) RevokeToken(_ context.Context, tokenOrID, _, _ string) *oidc.Error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.tokens[tokenOrID]; ok {
		t.revoked = true
	}
	return nil
}
func (s *storage) GetRefreshTokenInfo(context.Context, string, string) (string, string, error) {
	return "", "", op.ErrInvalidRefreshToken
}

func (s *storage) SigningKey(context.Context) (op.SigningKey, error) { return s.current(), nil }
func (s *storage) SignatureAlgorithms(context.Context) ([]jose.SignatureAlgorithm, error) {
	return []jose.SignatureAlgorithm{jose.RS256}, nil
}
func (s *storage) KeySet(context.Context) ([]op.Key, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ks []op.Key
	for _, k := range s.keys {
		ks = append(ks, publicKey{k})
	}
	return ks, nil
}

// client is a Client as op sees it.
type client struct{ Client }

func (c client) GetID() string                       { return c.ID }
func (c client) RedirectURIs() []string              { return nil }
func (c client) PostLogoutRedirectURIs() []string    { return nil }
func (c client) ApplicationType() op.ApplicationType { return op.ApplicationTypeWeb }
func (c client) AuthMethod() oidc.AuthMethod         { return oidc.AuthMethodPost }
func (c client) ResponseTypes() []oidc.ResponseType  { return nil }
func (c client) GrantTypes() []oidc.GrantType {
	g := []oidc.GrantType{oidc.GrantTypeClientCredentials}
	if c.Exchange {
		g = append(g, oidc.GrantTypeTokenExchange)
	}
	return g
}
func (c client) LoginURL(string) string { return "" }
func (c client) AccessTokenType() op.AccessTokenType {
	if c.Opaque {
		return op.AccessTokenTypeBearer
	}
	return op.AccessTokenTypeJWT
}
func (c client) IDTokenLifetime() time.Duration { return 5 * time.Minute }
func (c client) DevMode() bool                  { return true }
func (c client) RestrictAdditionalIdTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) RestrictAdditionalAccessTokenScopes() func([]string) []string {
	return func(s []string) []string { return s }
}
func (c client) IsScopeAllowed(string) bool           { return true }
func (c client) IDTokenUserinfoClaimsAssertion() bool { return false }
func (c client) ClockSkew() time.Duration             { return -c.NotBefore }

func (s *storage) GetClientByClientID(_ context.Context, id string) (op.Client, error) {
	c, ok := s.clients[id]
	if !ok {
		return nil, fmt.Errorf("oidctest: no client %q", id)
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, ok := s.clients[id]
	if !ok || c.Secret != secret {
		return errors.New("oidctest: wrong client credentials")
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errors.New("oidctest: userinfo is not provided")
}

// SetIntrospectionFromToken answers for a live token of the store; op
// answers {"active": false} when it returns an error.
func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, _ string) error {
	s.mu.Lock()
	t, ok := s.tokens[tokenID]
	s.mu.Unlock()
	if !ok || t.revoked || time.Now().After(t.exp) || t.subject != subject {
		return errors.New("oidctest: token not active")
	}
	resp.Issuer = op.IssuerFromContext(ctx)
	resp.Subject = t.subject
	resp.ClientID = t.clientID
	resp.Audience = slices.Clone(t.audience)
	resp.Scope = slices.Clone(t.scopes)
	resp.Expiration = oidc.FromTime(t.exp)
	resp.NotBefore = oidc.FromTime(t.nbf)
	resp.TokenType = oidc.BearerToken
	resp.Claims = maps.Clone(t.claims)
	return nil
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, _ []string) (map[string]any, error) {
	return maps.Clone(s.clients[clientID].Claims), nil
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("oidctest: JWT profile grants are not provided")
}
func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}
func (s *storage) Health(context.Context) error { return nil }

func (s *storage) ClientCredentials(_ context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(context.Background(), id, secret); err != nil {
		return nil, err
	}
	return client{s.clients[id]}, nil
}

func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	return &tokenRequest{subject: id, audience: slices.Clone(s.clients[id].Audience), scopes: scopes}, nil
}

// ValidateTokenExchangeRequest lets clients with Exchange trade an
// access token for an access token of another audience.
func (s *storage) ValidateTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) error {
	if !s.clients[req.GetClientID()].Exchange {
		return oidc.ErrUnauthorizedClient().WithDescription("client may not exchange tokens")
	}
	if req.GetRequestedTokenType() == "" {
		req.SetRequestedTokenType(oidc.AccessTokenType)
	}
	if req.GetRequestedTokenType() != oidc.AccessTokenType || req.GetExchangeSubjectTokenType() != oidc.AccessTokenType {
		return oidc.ErrInvalidRequest().WithDescription("only access tokens are exchanged, for access tokens")
	}
	if len(req.GetAudience()) == 0 {
		return oidc.ErrInvalidTarget().WithDescription("audience required")
	}
	return nil
}
func (s *storage) CreateTokenExchangeRequest(context.Context, op.TokenExchangeRequest) error {
	return nil
}

// GetPrivateClaimsFromTokenExchangeRequest carries the subject token's
// claims (roles) into the exchanged token.
func (s *storage) GetPrivateClaimsFromTokenExchangeRequest(_ context.Context, req op.TokenExchangeRequest) (map[string]any, error) {
	return maps.Clone(req.GetExchangeSubjectTokenClaims()), nil
}
func (s *storage) SetUserinfoFromTokenExchangeRequest(context.Context, *oidc.UserInfo, op.TokenExchangeRequest) error {
	return nil
}
