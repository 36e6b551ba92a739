package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/toolroute/toolroute/authz"
)

// TokenTypeAccessToken is the RFC 8693 token type of an OAuth access
// token: the type of the subject token sent and of the token asked for.
const TokenTypeAccessToken = "urn:ietf:params:oauth:token-type:access_token"

// The defaults of [ExchangeOptions].
const defaultRefreshBefore = 30 * time.Second

// ExchangeOptions configures an [Exchanger]. ClientID, ClientSecret,
// Audience and one of Issuer or TokenURL are required; every other zero
// field selects its default.
type ExchangeOptions struct {
	// Issuer is the authorization server; its token endpoint is
	// discovered on first use. Ignored if TokenURL is set.
	Issuer string
	// TokenURL is the authorization server's token endpoint.
	TokenURL string
	// ClientID and ClientSecret are this server's client credentials at
	// the authorization server (client_secret_post).
	ClientID, ClientSecret string
	// Audience is the upstream service's identifier: the exchanged token
	// is issued for it (RFC 8693 "audience").
	Audience string
	// Resource is the RFC 8707 resource indicator sent along. "" selects
	// Audience.
	Resource string
	// Scopes, if any, are asked for.
	Scopes []string
	// RefreshBefore is how long before its expiry a cached token is
	// exchanged anew. 0 selects 30 seconds.
	RefreshBefore time.Duration
	// CacheMax bounds the number of cached tokens. 0 selects 10,000.
	CacheMax int
	// HTTPClient calls the authorization server. nil selects a client
	// with a 10 s timeout.
	HTTPClient *http.Client
	// Logger receives failed exchanges (warn). Tokens are never logged.
	// nil selects [slog.Default].
	Logger *slog.Logger
}

// Exchanger obtains tokens for an upstream service by RFC 8693 token
// exchange: the caller's access token (the subject token) is traded for a
// token whose audience is the upstream, so that the upstream sees the
// caller's identity and never the MCP client's token (the MCP
// authorization specification forbids passing it through). It must be
// created with [NewExchanger] and is safe for concurrent use.
//
// Tokens are cached per subject until RefreshBefore their expiry:
// one round trip to the authorization server per subject and token
// lifetime, also when calls of one subject arrive together.
type Exchanger struct {
	opts   ExchangeOptions
	client *http.Client
	flight singleflight.Group

	cache *cache[string, string] // subject → token, until it is exchanged anew

	mu       sync.Mutex
	tokenURL string
	retry    backoff // of discovery, while it fails
}

// NewExchanger returns an exchanger for opts, or an error if they are
// invalid.
func NewExchanger(opts ExchangeOptions) (*Exchanger, error) {
	switch {
	case opts.TokenURL != "":
		if err := checkIssuer("ExchangeOptions.TokenURL", opts.TokenURL); err != nil {
			return nil, err
		}
	default:
		if err := checkIssuer("ExchangeOptions.Issuer", opts.Issuer); err != nil {
			return nil, err
		}
	}
	switch {
	case opts.ClientID == "" || opts.ClientSecret == "":
		return nil, errors.New("oauth: ExchangeOptions.ClientID and ClientSecret are required: the token endpoint authenticates token exchanges")
	case opts.Audience == "":
		return nil, errors.New("oauth: ExchangeOptions.Audience is empty: name the upstream service the token is for")
	}
	if opts.Resource == "" {
		opts.Resource = opts.Audience
	}
	if opts.RefreshBefore <= 0 {
		opts.RefreshBefore = defaultRefreshBefore
	}
	if opts.CacheMax <= 0 {
		opts.CacheMax = defaultCacheMax
	}
	return &Exchanger{opts: opts, client: defaultClient(opts.HTTPClient), tokenURL: opts.TokenURL, cache: newCache[string, string](opts.CacheMax)}, nil
}

func (e *Exchanger) log() *slog.Logger {
	if e.opts.Logger != nil {
		return e.opts.Logger
	}
	return slog.Default()
}

// Token returns a token for the upstream audience on behalf of c, from
// the cache or by exchanging c.Bearer. c must have a subject and a
// bearer.
//
// The error is an *[authz.UnauthenticatedError] if the authorization
// server refuses the exchange (the caller's token is no longer good), an
// *[authz.OutageError] if it cannot be reached; both have fixed texts,
// safe to show a client.
func (e *Exchanger) Token(ctx context.Context, c authz.Caller) (string, error) {
	if c.Subject == "" || c.Bearer == "" {
		return "", &authz.UnauthenticatedError{Reason: "oauth: token exchange needs a caller with a subject and a bearer token"}
	}
	if tok, ok := e.cache.get(c.Subject, time.Now()); ok {
		return tok, nil
	}
	if testHookExchangeMissed != nil {
		testHookExchangeMissed()
	}
	// One exchange per subject at a time; it outlives a caller that
	// gives up, so that the others get its result. It re-reads the
	// cache first: a caller that missed just before the previous
	// exchange stored its token exchanges nothing.
	v, err, _ := e.flight.Do(c.Subject, func() (any, error) {
		if tok, ok := e.cache.get(c.Subject, time.Now()); ok {
			return tok, nil
		}
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), defaultTimeout)
		defer cancel()
		return e.exchange(ctx, c)
	})
	if err != nil {
		return "", err
	}
	return v.(string), nil
}

// testHookExchangeMissed, if set by a test, runs when Token has missed
// the cache, before it joins or starts an exchange.
var testHookExchangeMissed func()

func (e *Exchanger) exchange(ctx context.Context, c authz.Caller) (string, error) {
	tokenURL, err := e.endpoint(ctx)
	if err != nil {
		return "", err
	}
	tok, err := oauthex.ExchangeToken(ctx, tokenURL, &oauthex.TokenExchangeRequest{
		RequestedTokenType: TokenTypeAccessToken,
		Audience:           e.opts.Audience,
		Resource:           e.opts.Resource,
		Scope:              e.opts.Scopes,
		SubjectToken:       c.Bearer,
		SubjectTokenType:   TokenTypeAccessToken,
	}, &oauthex.ClientCredentials{
		ClientID:         e.opts.ClientID,
		ClientSecretAuth: &oauthex.ClientSecretAuth{ClientSecret: e.opts.ClientSecret},
	}, e.client)
	var refused *oauth2.RetrieveError
	switch {
	case errors.As(err, &refused) && refused.Response != nil && refused.Response.StatusCode < 500:
		// RetrieveError's text holds the server's answer, never the request.
		e.log().WarnContext(ctx, "oauth: token exchange refused", slog.String("subject", c.Subject), slog.String("audience", e.opts.Audience), slog.String("error", refused.ErrorCode), slog.String("description", refused.ErrorDescription))
		return "", &authz.UnauthenticatedError{Reason: fmt.Sprintf("oauth: token exchange for audience %q refused: %s %s", e.opts.Audience, refused.ErrorCode, refused.ErrorDescription)}
	case err != nil:
		err = fmt.Errorf("oauth: token exchange at %s for audience %q: %w", tokenURL, e.opts.Audience, err)
		e.log().WarnContext(ctx, "oauth: token exchange failed", slog.String("subject", c.Subject), slog.Any("error", err))
		return "", &authz.OutageError{Err: err}
	case tok.AccessToken == "":
		return "", &authz.OutageError{Err: fmt.Errorf("oauth: token exchange at %s: no access_token in the answer", tokenURL)}
	case tok.Extra("issued_token_type") != TokenTypeAccessToken:
		return "", &authz.OutageError{Err: fmt.Errorf("oauth: token exchange at %s: issued a token of type %v, not an access token", tokenURL, tok.Extra("issued_token_type"))}
	}
	until := time.Now().Add(e.opts.RefreshBefore) // no expiry given: reuse briefly
	if !tok.Expiry.IsZero() {
		until = tok.Expiry.Add(-e.opts.RefreshBefore)
	}
	e.cache.put(c.Subject, tok.AccessToken, until)
	return tok.AccessToken, nil
}

// endpoint returns the token endpoint, discovering it if needed: while
// discovery fails, tries back off from 1 to 8 seconds (see [backoff]).
func (e *Exchanger) endpoint(ctx context.Context) (string, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.tokenURL != "" {
		return e.tokenURL, nil
	}
	if d := e.retry.wait(time.Now()); d > 0 {
		return "", &authz.OutageError{Err: fmt.Errorf("oauth: the token endpoint of issuer %s is not known yet (discovery failed; next try in %v)", e.opts.Issuer, d.Round(time.Millisecond))}
	}
	meta, err := discover(ctx, e.client, e.opts.Issuer)
	if err == nil && meta.TokenEndpoint == "" {
		err = fmt.Errorf("oauth: the metadata of issuer %s has no token_endpoint", e.opts.Issuer)
	}
	if err != nil {
		e.retry.failed(time.Now())
		return "", &authz.OutageError{Err: err}
	}
	e.retry.succeeded()
	e.tokenURL = meta.TokenEndpoint
	return e.tokenURL, nil
}

// Transport returns an [http.RoundTripper] that sends every request with
// a token for the upstream audience, exchanged for the caller in the
// request's context ([authz.CallerFromContext]), in place of any
// Authorization header: put it under [authz.Transport] (as its base), so
// that a request is checked before a token is exchanged for it, and the
// caller's own token never leaves. A request without a caller, or whose
// exchange fails, is not sent. nil base selects [http.DefaultTransport].
func (e *Exchanger) Transport(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &exchangeTransport{e: e, base: base}
}

type exchangeTransport struct {
	e    *Exchanger
	base http.RoundTripper
}

func (t *exchangeTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, ok := authz.CallerFromContext(req.Context())
	var tok string
	err := error(&authz.UnauthenticatedError{Reason: "oauth: upstream request without a caller in its context"})
	if ok {
		tok, err = t.e.Token(req.Context(), c)
	}
	if err != nil {
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, err
	}
	r2 := req.Clone(req.Context())
	r2.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r2)
}

// WithoutBearer returns an [http.RoundTripper] that sends every request
// without an Authorization header: put it under [authz.Transport] (as
// its base) where upstream requests must not carry the caller's token and
// no token exchange is configured. nil base selects
// [http.DefaultTransport].
func WithoutBearer(base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return roundTripFunc(func(req *http.Request) (*http.Response, error) {
		if _, ok := req.Header["Authorization"]; !ok {
			return base.RoundTrip(req)
		}
		r2 := req.Clone(req.Context())
		r2.Header.Del("Authorization")
		return base.RoundTrip(r2)
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
