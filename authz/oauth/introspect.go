package oauth

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolroute/toolroute/authz"
)

// The defaults of [IntrospectionOptions].
const (
	defaultCacheTTL = time.Minute
	defaultCacheMax = 10_000
)

// probeInterval is the least time between two readiness probes of an
// introspection endpoint that was down.
const probeInterval = 2 * time.Second

// maxToken is the longest token an IntrospectionVerifier asks about, in
// bytes: a longer one is refused without asking (no access token comes
// near it, and an endpoint may answer a huge one with a 4xx).
const maxToken = 8 << 10

// IntrospectionOptions configures an [IntrospectionVerifier]. URL,
// ClientID, ClientSecret and Audience are required; every other zero
// field selects its default.
type IntrospectionOptions struct {
	// URL is the authorization server's introspection endpoint (RFC
	// 7662).
	URL string
	// ClientID and ClientSecret are this resource server's client
	// credentials at the authorization server (HTTP Basic, RFC 6749
	// §2.3.1).
	ClientID, ClientSecret string
	// Audience is this resource server's identifier: the answer's "aud"
	// must contain it (an answer without "aud" is refused).
	Audience string
	// Issuer, if set, must equal the answer's "iss" when it has one.
	Issuer string
	// RolesClaim is where the roles are read in the answer, as in
	// [JWTOptions.RolesClaim]. "" selects "roles".
	RolesClaim string
	// ScopesClaim is where the granted scopes are read in the answer,
	// as in [JWTOptions.ScopesClaim]. "" selects "scope" (RFC 7662's).
	ScopesClaim string
	// CacheTTL bounds how long an active token's answer is reused; it is
	// never reused past the token's "exp". 0 selects one minute; a
	// negative value turns the cache off (every request asks).
	CacheTTL time.Duration
	// CacheMax bounds the number of cached answers. 0 selects 10,000.
	CacheMax int
	// HTTPClient calls the endpoint. nil selects a client with a 10 s
	// timeout.
	HTTPClient *http.Client
	// Logger receives why tokens are refused (debug). nil selects
	// [slog.Default].
	Logger *slog.Logger
}

// IntrospectionVerifier verifies opaque access tokens by asking the
// authorization server (RFC 7662 token introspection). It must be created
// with [NewIntrospectionVerifier] and is safe for concurrent use.
//
// An inactive token is refused (HTTP 401). An unreachable endpoint, or
// one that refuses this server's credentials, is an outage (HTTP 503).
// Active answers are cached by the token's SHA-256 digest, until the
// token's "exp" or CacheTTL, whichever comes first.
type IntrospectionVerifier struct {
	opts    IntrospectionOptions
	roles   string
	scopes  string
	client  *http.Client
	down    atomic.Bool           // the endpoint is down: not ready
	failure atomic.Pointer[error] // and why
	// suspect is set by a 4xx answer about a caller's token, which a
	// stranger may provoke (a 413 for a huge token, a firewall's 403):
	// it never makes the verifier unready by itself, but has Ready
	// probe the endpoint with a token of its own, whose answer decides.
	suspect atomic.Bool

	probing   atomic.Bool  // a readiness probe is running
	lastProbe atomic.Int64 // when the last one started, in Unix ns

	cache callers
}

// NewIntrospectionVerifier returns a verifier for opts, or an error if
// they are invalid.
func NewIntrospectionVerifier(opts IntrospectionOptions) (*IntrospectionVerifier, error) {
	if err := checkIssuer("IntrospectionOptions.URL", opts.URL); err != nil {
		return nil, err
	}
	switch {
	case opts.ClientID == "" || opts.ClientSecret == "":
		return nil, errors.New("oauth: IntrospectionOptions.ClientID and ClientSecret are required: the introspection endpoint authenticates its callers")
	case opts.Audience == "":
		return nil, errors.New("oauth: IntrospectionOptions.Audience is empty: name this resource server, so that tokens for other services are refused")
	}
	if opts.Issuer != "" {
		if err := checkIssuer("IntrospectionOptions.Issuer", opts.Issuer); err != nil {
			return nil, err
		}
	}
	if err := checkRolesClaim(opts.RolesClaim); err != nil {
		return nil, err
	}
	if err := checkClaimPath("scopes", opts.ScopesClaim); err != nil {
		return nil, err
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = defaultCacheTTL
	}
	if opts.CacheMax <= 0 {
		opts.CacheMax = defaultCacheMax
	}
	return &IntrospectionVerifier{
		opts:   opts,
		roles:  cmpOr(opts.RolesClaim, DefaultRolesClaim),
		scopes: cmpOr(opts.ScopesClaim, DefaultScopesClaim),
		client: defaultClient(opts.HTTPClient),
		cache:  newCallers(opts.CacheMax),
	}, nil
}

func (v *IntrospectionVerifier) log() *slog.Logger {
	if v.opts.Logger != nil {
		return v.opts.Logger
	}
	return slog.Default()
}

// Ready reports whether the authorization server answers (nil before
// the first request), else why not. It has the shape of
// server.HTTPServerOptions.ReadyCheck, so that /readyz says so. The endpoint
// is down when it cannot be reached or answers 5xx (or refuses this
// server's credentials, or answers what is not an introspection, to a
// token of Ready's own); a 4xx answer about a caller's token, which a
// stranger can provoke, never makes it unready. While the endpoint is
// down or a 4xx came, Ready asks the endpoint about a token that exists
// nowhere, in the background and at most every few seconds, so that a
// readiness probe notices the server is back even when no traffic
// reaches an unready replica. It never waits for that.
func (v *IntrospectionVerifier) Ready(context.Context) error {
	down := v.down.Load()
	if !down && !v.suspect.Load() {
		return nil
	}
	if time.Since(time.Unix(0, v.lastProbe.Load())) >= probeInterval && v.probing.CompareAndSwap(false, true) {
		v.lastProbe.Store(time.Now().UnixNano())
		go func() {
			defer v.probing.Store(false)
			ctx, cancel := context.WithTimeout(context.Background(), defaultTimeout)
			defer cancel()
			v.introspect(ctx, "toolroute-readiness-probe-"+rand.Text(), true)
		}()
	}
	if !down {
		return nil
	}
	if err := v.failure.Load(); err != nil {
		return *err
	}
	return fmt.Errorf("oauth: the introspection endpoint %s does not answer", v.opts.URL)
}

// Verify asks the authorization server about token and returns its
// caller: the subject from "sub" (required), the roles from the roles
// claim, and the token as Bearer. It has the shape of
// server.TokenVerifier (the request is not used).
//
// An inactive, foreign (audience, issuer) or subject-less token yields an
// error wrapping [auth.ErrInvalidToken], as do a token longer than 8 KiB
// (refused without asking) and one the endpoint will not judge (400,
// 413, 414, 422, 431); an outage an *[authz.OutageError]. Neither holds
// the token.
func (v *IntrospectionVerifier) Verify(ctx context.Context, token string, _ *http.Request) (authz.Caller, error) {
	refuse := func(why string) (authz.Caller, error) {
		v.log().DebugContext(ctx, "oauth: token refused by introspection", slog.String("reason", why))
		return authz.Caller{}, fmt.Errorf("oauth: introspection: %s: %w", why, auth.ErrInvalidToken)
	}
	if len(token) > maxToken {
		return refuse(fmt.Sprintf("the token exceeds %d bytes", maxToken))
	}
	now := time.Now()
	if c, _, ok := v.cache.get(token, now); ok {
		return c, nil
	}
	claims, err := v.introspect(ctx, token, false)
	var judged *unjudgedError
	switch {
	case errors.As(err, &judged):
		return refuse(judged.why)
	case err != nil:
		return authz.Caller{}, err
	}
	if active, _ := claims["active"].(bool); !active {
		return refuse("the token is not active")
	}
	if iss, has := claims["iss"]; has && v.opts.Issuer != "" && iss != v.opts.Issuer {
		return refuse(fmt.Sprintf("issuer %v is not %s", iss, v.opts.Issuer))
	}
	if !audienceHas(claims["aud"], v.opts.Audience) {
		return refuse(fmt.Sprintf("audience %v does not contain %s", claims["aud"], v.opts.Audience))
	}
	until := now.Add(v.opts.CacheTTL)
	if exp, has := claims["exp"].(float64); has {
		e := time.Unix(int64(exp), 0)
		if !e.After(now) {
			return refuse("the token has expired")
		}
		if e.Before(until) {
			until = e
		}
	}
	if nbf, has := claims["nbf"].(float64); has && time.Unix(int64(nbf), 0).After(now.Add(defaultLeeway)) {
		return refuse("the token is not valid yet")
	}
	c, err := callerFrom(claims, v.roles, v.scopes, token)
	if err != nil {
		return refuse(err.Error())
	}
	if v.opts.CacheTTL > 0 {
		v.cache.put(token, c, "", until)
	}
	return c, nil
}

func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if x == want {
				return true
			}
		}
	}
	return false
}

// unjudgedError is the endpoint's 4xx answer about the token itself
// (its size, its form): the token is refused, the endpoint is not down.
type unjudgedError struct{ why string }

func (e *unjudgedError) Error() string { return e.why }

// introspect posts token to the endpoint and returns the answer's
// members. own tells a token of the verifier's own (Ready's probe), whose
// every failure says the endpoint is down; a caller's token's 4xx only
// makes it suspect (see [IntrospectionVerifier.Ready]), and a caller
// that gives up (ctx ends) says nothing about the endpoint.
func (v *IntrospectionVerifier) introspect(ctx context.Context, token string, own bool) (map[string]any, error) {
	outage := func(err error) (map[string]any, error) {
		v.failure.Store(&err)
		v.down.Store(true)
		return nil, &authz.OutageError{Err: err}
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, v.opts.URL, strings.NewReader(form.Encode()))
	if err != nil {
		return outage(fmt.Errorf("oauth: introspection request: %v", err))
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(url.QueryEscape(v.opts.ClientID), url.QueryEscape(v.opts.ClientSecret))
	resp, err := v.client.Do(req)
	if err != nil {
		// The error names the endpoint; the token is in the body.
		err = fmt.Errorf("oauth: introspection: %w", err)
		if ctx.Err() != nil && !own {
			return nil, &authz.OutageError{Err: err}
		}
		return outage(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxDocument))
	switch {
	case err != nil:
		err = fmt.Errorf("oauth: introspection at %s: reading the answer: %v", v.opts.URL, err)
		if ctx.Err() != nil && !own {
			return nil, &authz.OutageError{Err: err}
		}
		return outage(err)
	case resp.StatusCode != http.StatusOK:
		var oe struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		json.Unmarshal(body, &oe)
		why := strings.TrimSpace(resp.Status + " " + oe.Error + " " + oe.Description)
		credentials := resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden || oe.Error == "invalid_client" || oe.Error == "unauthorized_client"
		if credentials {
			err = fmt.Errorf("oauth: introspection at %s refuses this server's client credentials (client %q): %s", v.opts.URL, v.opts.ClientID, why)
		} else {
			err = fmt.Errorf("oauth: introspection at %s: %s", v.opts.URL, why)
		}
		if own || resp.StatusCode >= 500 || resp.StatusCode < 400 {
			return outage(err)
		}
		// A 4xx about a caller's token: a stranger may provoke it (a
		// huge token, a firewall's 403 for a hostile-looking one), so it
		// never says the endpoint is down; Ready's probe decides.
		v.suspect.Store(true)
		switch resp.StatusCode {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusRequestURITooLong, http.StatusUnprocessableEntity, http.StatusRequestHeaderFieldsTooLarge:
			if !credentials {
				return nil, &unjudgedError{why: "the endpoint will not judge the token: " + why}
			}
		}
		return nil, &authz.OutageError{Err: err}
	}
	var claims map[string]any
	if err := json.Unmarshal(body, &claims); err != nil {
		return outage(fmt.Errorf("oauth: introspection at %s: the answer is not a JSON object: %v", v.opts.URL, err))
	}
	v.down.Store(false)
	v.suspect.Store(false)
	return claims, nil
}
