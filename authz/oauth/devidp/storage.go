package devidp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/zitadel/oidc/v3/pkg/oidc"
	"github.com/zitadel/oidc/v3/pkg/op"
)

// defaultLifetime is a token's lifetime when its client names none.
const defaultLifetime = 5 * time.Minute

// key is a signing key: RSA, held in memory only.
type key struct {
	id  string
	key *rsa.PrivateKey
}

// newKey generates a signing key.
func newKey() (key, error) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return key{}, fmt.Errorf("devidp: generating a signing key: %w", err)
	}
	return key{id: rand.Text()[:12], key: k}, nil
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
	scopes   []string // as granted, without the minting scopes
	claims   map[string]any
	nbf, exp time.Time
	revoked  bool
}

// storage is the provider's in-memory storage: op.Storage,
// op.ClientCredentialsStorage and op.TokenExchangeStorage.
type storage struct {
	clients    map[string]Client // read-only after Start
	rolesClaim string
	log        *slog.Logger

	mu     sync.Mutex
	keys   []key
	tokens map[string]*token
	seq    int
}

var (
	_ op.Storage                        = (*storage)(nil)
	_ op.ClientCredentialsStorage       = (*storage)(nil)
	_ op.TokenExchangeStorage           = (*storage)(nil)
	_ op.CanGetPrivateClaimsFromRequest = (*storage)(nil)
)

func newStorage(clients []Client, rolesClaim string, log *slog.Logger) (*storage, error) {
	k, err := newKey()
	if err != nil {
		return nil, err
	}
	m := make(map[string]Client, len(clients))
	for _, c := range clients {
		c.Audience = slices.Clone(c.Audience)
		c.Claims = maps.Clone(c.Claims)
		m[c.ID] = c
	}
	return &storage{clients: m, rolesClaim: rolesClaim, log: log, keys: []key{k}, tokens: map[string]*token{}}, nil
}

func (s *storage) current() key {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.keys[len(s.keys)-1]
}

func (s *storage) rotate() error {
	k, err := newKey()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys = append(s.keys, k)
	return nil
}

var errNoCodeFlow = errors.New("devidp: the authorization code flow is not provided")

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

// tokenRequest is a client-credentials token request, with what the
// minting scopes asked for already applied.
type tokenRequest struct {
	clientID string
	subject  string
	audience []string
	scopes   []string // all of the request's scopes: the response repeats them
	plain    []string // the scopes other than the minting ones
	claims   map[string]any
	roles    []string // as minted; nil if none were asked for
}

func (r *tokenRequest) GetSubject() string    { return r.subject }
func (r *tokenRequest) GetAudience() []string { return r.audience }
func (r *tokenRequest) GetScopes() []string   { return r.scopes }

func (s *storage) CreateAccessToken(_ context.Context, req op.TokenRequest) (string, time.Time, error) {
	var clientID string
	var claims map[string]any
	scopes := req.GetScopes()
	var roles []string
	switch r := req.(type) {
	case *tokenRequest:
		clientID, claims, scopes, roles = r.clientID, r.claims, r.plain, r.roles
	case op.TokenExchangeRequest:
		clientID = r.GetClientID()
		claims = r.GetExchangeSubjectTokenClaims()
	default:
		return "", time.Time{}, fmt.Errorf("devidp: token request %T not provided", req)
	}
	c := s.clients[clientID]
	lifetime := c.Lifetime
	if lifetime == 0 {
		lifetime = defaultLifetime
	}
	now := time.Now()
	t := &token{subject: req.GetSubject(), clientID: clientID, audience: slices.Clone(req.GetAudience()), scopes: slices.Clone(scopes),
		claims: maps.Clone(claims), nbf: now.Add(c.NotBefore), exp: now.Add(lifetime)}
	s.mu.Lock()
	s.seq++
	id := fmt.Sprintf("t%d", s.seq)
	s.tokens[id] = t
	s.mu.Unlock()
	attrs := []any{"client", clientID, "subject", t.subject}
	if roles != nil {
		attrs = append(attrs, "roles", roles)
	}
	attrs = append(attrs, "audience", t.audience, "expires", t.exp.Format(time.RFC3339))
	if _, ok := req.(op.TokenExchangeRequest); ok {
		attrs = append(attrs, "grant", "token-exchange")
	}
	s.log.Info("devidp: access token issued", attrs...)
	return id, t.exp, nil
}

func (s *storage) CreateAccessAndRefreshTokens(context.Context, op.TokenRequest, string) (string, string, time.Time, error) {
	return "", "", time.Time{}, errors.New("devidp: refresh tokens are not provided")
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

// DevMode is true: op then relaxes the checks a production provider
// makes of its clients (plain-http redirect URIs). It is one more reason
// this provider is for development only.
func (c client) DevMode() bool { return true }
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
		return nil, fmt.Errorf("devidp: no client %q", id)
	}
	return client{c}, nil
}

func (s *storage) AuthorizeClientIDSecret(_ context.Context, id, secret string) error {
	c, ok := s.clients[id]
	if !ok || c.Secret != secret {
		// invalid_client, not the server_error op makes of other errors.
		return oidc.ErrInvalidClient().WithDescription("wrong client credentials for client %q", id)
	}
	return nil
}

func (s *storage) SetUserinfoFromScopes(context.Context, *oidc.UserInfo, string, string, []string) error {
	return nil
}
func (s *storage) SetUserinfoFromToken(context.Context, *oidc.UserInfo, string, string, string) error {
	return errors.New("devidp: userinfo is not provided")
}

// SetIntrospectionFromToken answers for a live token of the store; op
// answers {"active": false} when it returns an error.
func (s *storage) SetIntrospectionFromToken(ctx context.Context, resp *oidc.IntrospectionResponse, tokenID, subject, _ string) error {
	s.mu.Lock()
	stored, ok := s.tokens[tokenID]
	var t token
	if ok {
		t = *stored // revoked changes under mu
	}
	s.mu.Unlock()
	if !ok || t.revoked || time.Now().After(t.exp) || t.subject != subject {
		return errors.New("devidp: token not active")
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

// GetPrivateClaimsFromRequest gives a client-credentials JWT the claims
// its request settled on: the client's, with the minted roles.
func (s *storage) GetPrivateClaimsFromRequest(ctx context.Context, req op.TokenRequest, scopes []string) (map[string]any, error) {
	if r, ok := req.(*tokenRequest); ok {
		return maps.Clone(r.claims), nil
	}
	return nil, fmt.Errorf("devidp: token request %T not provided", req)
}

func (s *storage) GetPrivateClaimsFromScopes(_ context.Context, _, clientID string, _ []string) (map[string]any, error) {
	return maps.Clone(s.clients[clientID].Claims), nil
}
func (s *storage) GetKeyByIDAndClientID(context.Context, string, string) (*jose.JSONWebKey, error) {
	return nil, errors.New("devidp: JWT profile grants are not provided")
}
func (s *storage) ValidateJWTProfileScopes(_ context.Context, _ string, scopes []string) ([]string, error) {
	return scopes, nil
}
func (s *storage) Health(context.Context) error { return nil }

func (s *storage) ClientCredentials(ctx context.Context, id, secret string) (op.Client, error) {
	if err := s.AuthorizeClientIDSecret(ctx, id, secret); err != nil {
		return nil, err
	}
	return client{s.clients[id]}, nil
}

// ClientCredentialsTokenRequest settles what the client's token will
// say: by default its own ID as the subject, its Audience and Claims; a
// Mint client's minting scopes replace them.
func (s *storage) ClientCredentialsTokenRequest(_ context.Context, id string, scopes []string) (op.TokenRequest, error) {
	c := s.clients[id]
	r := &tokenRequest{clientID: id, subject: id, audience: slices.Clone(c.Audience), scopes: scopes, claims: maps.Clone(c.Claims)}
	var subject string
	var roles, audience []string
	for _, sc := range scopes {
		prefix, value, ok := cutMintScope(sc)
		if !ok {
			r.plain = append(r.plain, sc)
			continue
		}
		if !c.Mint {
			return nil, oidc.ErrInvalidScope().WithDescription("scope %q: client %q may not name its token's subject, roles or audience (it is not a Mint client)", sc, id)
		}
		if value == "" {
			return nil, oidc.ErrInvalidScope().WithDescription("scope %q names nothing: want %sVALUE", sc, prefix)
		}
		switch prefix {
		case ScopeSubject:
			if subject != "" && subject != value {
				return nil, oidc.ErrInvalidScope().WithDescription("scopes %q and %q: a token has one subject", ScopeSubject+subject, sc)
			}
			subject = value
		case ScopeRole:
			if !slices.Contains(roles, value) {
				roles = append(roles, value)
			}
		case ScopeAudience:
			if !slices.Contains(audience, value) {
				audience = append(audience, value)
			}
		}
	}
	if subject != "" {
		r.subject = subject
	}
	if audience != nil {
		r.audience = audience
	}
	if roles != nil {
		r.roles = roles
		r.claims = withRoles(r.claims, s.rolesClaim, roles)
		if s.rolesClaim == "scope" {
			// The roles are the granted scope: introspection says so too.
			r.plain = slices.Clone(roles)
		}
	}
	return r, nil
}

// cutMintScope splits a minting scope into its prefix and value; ok is
// false for any other scope.
func cutMintScope(scope string) (prefix, value string, ok bool) {
	for _, p := range []string{ScopeSubject, ScopeRole, ScopeAudience} {
		if v, found := strings.CutPrefix(scope, p); found {
			return p, v, true
		}
	}
	return "", "", false
}

// withRoles returns a copy of claims with roles at path: an array of
// strings, or one space-separated string for "scope" (RFC 9068's shape
// of that claim). A dotted path nests objects ("realm_access.roles" is
// {"realm_access": {"roles": [...]}}), keeping what the objects on the
// way already hold; a URL ("https://example.com/roles") is one claim
// name.
func withRoles(claims map[string]any, path string, roles []string) map[string]any {
	out := maps.Clone(claims)
	if out == nil {
		out = map[string]any{}
	}
	if path == "scope" {
		out[path] = strings.Join(roles, " ")
		return out
	}
	segs := []string{path}
	if !strings.Contains(path, "://") {
		segs = strings.Split(path, ".")
	}
	m := out
	for _, seg := range segs[:len(segs)-1] {
		inner, _ := m[seg].(map[string]any)
		inner = maps.Clone(inner)
		if inner == nil {
			inner = map[string]any{}
		}
		m[seg] = inner
		m = inner
	}
	m[segs[len(segs)-1]] = slices.Clone(roles)
	return out
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
