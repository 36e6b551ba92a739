package oauth

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/time/rate"

	"github.com/toolroute/toolroute/authz"
)

// DefaultAlgorithms lists the signature algorithms a [JWTVerifier]
// accepts when its options name none, which are also the only ones they
// may name: asymmetric ones. "none" and the HMAC algorithms (HS256, ...)
// are never accepted: a verifier holds only public keys, and an HMAC
// "signed" with a public key proves nothing. It is a copy, for reading:
// changing it changes no verifier.
var DefaultAlgorithms = slices.Clone(asymmetric)

// asymmetric is the package's own list behind DefaultAlgorithms.
var asymmetric = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// The defaults of [JWTOptions].
const (
	defaultLeeway          = 30 * time.Second
	defaultRefreshInterval = time.Hour
	defaultMinRefresh      = time.Minute
)

// JWTOptions configures a [JWTVerifier]. Issuer and Audience are
// required; every other zero field selects its default.
type JWTOptions struct {
	// Issuer is the authorization server's issuer identifier. Its
	// metadata is discovered from it (OpenID Connect discovery, else RFC
	// 8414), and a token's "iss" must equal it exactly.
	Issuer string
	// Audience is this resource server's identifier (RFC 8707): a token's
	// "aud" must contain it, so that a token issued for another service
	// is refused.
	Audience string
	// RolesClaim is where the caller's roles are read: a claim name
	// ("roles", "groups", "scope") or a dotted path ("realm_access.roles");
	// an array of strings or a space-separated string. "" selects
	// "roles". A token without the claim is a caller without roles.
	RolesClaim string
	// ScopesClaim is where the token's granted scopes are read
	// ([authz.Caller].Scopes), in the shapes RolesClaim reads: "scope"
	// (the default, RFC 9068's space-separated string) or "scp" (an
	// array, as Entra ID and Okta issue). A token without it has no
	// scopes.
	ScopesClaim string
	// Algorithms are the accepted signature algorithms. nil selects
	// [DefaultAlgorithms]; "none" and HS* are refused.
	Algorithms []string
	// Leeway is the clock skew allowed on "exp", "nbf" and "iat". 0
	// selects 30 seconds; a negative value turns it off (no skew allowed).
	Leeway time.Duration
	// RefreshInterval is how often the key set is fetched again in the
	// background. 0 selects one hour.
	RefreshInterval time.Duration
	// MinRefreshInterval limits refetches of the key set when a token
	// names a key it does not hold (key rotation). 0 selects one minute.
	// While the issuer cannot be reached before the first keys are
	// held, discovery and the first fetch are retried in the background
	// after 1, 2, 4 and then every 8 seconds (or every
	// MinRefreshInterval, if shorter): a verifier that started during an
	// outage verifies within seconds of the issuer's return.
	MinRefreshInterval time.Duration
	// CacheTTL bounds how long a verified token's caller is reused
	// (looked up by the token's SHA-256 digest) without verifying its
	// signature again; never past the token's "exp". 0 selects one
	// minute; a negative value turns the cache off. A key removed from
	// the key set stops verifying within it.
	CacheTTL time.Duration
	// HTTPClient fetches the metadata and the key set. nil selects a
	// client with a 10 s timeout.
	HTTPClient *http.Client
	// Logger receives why tokens are refused (debug) and the key set's
	// fetch failures (warn). Tokens are never logged. nil selects
	// [slog.Default].
	Logger *slog.Logger
}

// JWTVerifier verifies JWT access tokens (RFC 9068) of one issuer for one
// audience, with the issuer's published keys. It must be created with
// [NewJWTVerifier], is safe for concurrent use, and must be closed.
//
// Keys: on first use (or [JWTVerifier.Ready]) it discovers the issuer's
// jwks_uri and fetches the key set, retrying in the background with a
// backoff (1 s doubling to 8 s, one try at a time) until it holds keys;
// it keeps them in memory, refreshes them every RefreshInterval, and
// fetches them again, at most once per MinRefreshInterval, when a token
// names a key it does not hold (the issuer rotated its keys). When the issuer is unreachable, the keys held
// keep verifying; with none held, or for a key not held while the
// issuer cannot be reached, [JWTVerifier.Verify] fails with an
// *[authz.OutageError] (HTTP 503 from the server), never a 401.
type JWTVerifier struct {
	opts   JWTOptions
	roles  string
	scopes string
	parser *jwt.Parser
	client *http.Client // discovery
	jwks   *http.Client // the key set, watched by jwksWatch
	ctx    context.Context
	cancel context.CancelFunc
	cache  callers

	keys    atomic.Pointer[keySet] // nil until loaded
	loading atomic.Bool            // Ready is loading the keys
	down    atomic.Bool            // the last fetch failed

	mu       sync.Mutex // held while loading
	stopKeys context.CancelFunc
	retry    backoff     // of the first load, while it fails
	retrying *time.Timer // the background retry of the first load, or nil
	lastErr  error
	failure  atomic.Pointer[error] // lastErr, for Ready, which must not wait on mu
}

// keySet is the loaded key set.
type keySet struct{ kf keyfunc.Keyfunc }

// NewJWTVerifier returns a verifier for opts. It does not contact the
// issuer: keys are fetched on first use. It fails if opts are invalid.
func NewJWTVerifier(opts JWTOptions) (*JWTVerifier, error) {
	if err := checkIssuer("JWTOptions.Issuer", opts.Issuer); err != nil {
		return nil, err
	}
	if opts.Audience == "" {
		return nil, errors.New("oauth: JWTOptions.Audience is empty: name this resource server (RFC 8707), so that tokens for other services are refused")
	}
	if err := checkRolesClaim(opts.RolesClaim); err != nil {
		return nil, err
	}
	if err := checkClaimPath("scopes", opts.ScopesClaim); err != nil {
		return nil, err
	}
	algs := opts.Algorithms
	if algs == nil {
		algs = asymmetric
	}
	if len(algs) == 0 {
		return nil, errors.New("oauth: JWTOptions.Algorithms is empty: no token could be verified")
	}
	for _, a := range algs {
		if !slices.Contains(asymmetric, a) {
			return nil, fmt.Errorf("oauth: JWTOptions.Algorithms: %q is not an asymmetric signature algorithm (one of %s)", a, strings.Join(asymmetric, ", "))
		}
	}
	opts.Algorithms = slices.Clone(algs)
	switch {
	case opts.Leeway < 0:
		opts.Leeway = 0
	case opts.Leeway == 0:
		opts.Leeway = defaultLeeway
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = defaultRefreshInterval
	}
	if opts.MinRefreshInterval <= 0 {
		opts.MinRefreshInterval = defaultMinRefresh
	}
	if opts.CacheTTL == 0 {
		opts.CacheTTL = defaultCacheTTL
	}
	v := &JWTVerifier{
		retry:  backoff{max: min(maxRetry, opts.MinRefreshInterval)},
		opts:   opts,
		roles:  cmpOr(opts.RolesClaim, DefaultRolesClaim),
		scopes: cmpOr(opts.ScopesClaim, DefaultScopesClaim),
		parser: jwt.NewParser(
			jwt.WithValidMethods(opts.Algorithms),
			jwt.WithIssuer(opts.Issuer),
			jwt.WithAudience(opts.Audience),
			jwt.WithLeeway(opts.Leeway),
			jwt.WithIssuedAt(),
			jwt.WithExpirationRequired(),
		),
		client: defaultClient(opts.HTTPClient),
		cache:  newCallers(defaultCacheMax),
	}
	v.jwks = &http.Client{
		Transport:     &jwksWatch{base: v.client.Transport, v: v},
		Timeout:       v.client.Timeout,
		CheckRedirect: v.client.CheckRedirect,
	}
	v.ctx, v.cancel = context.WithCancel(context.Background())
	return v, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func (v *JWTVerifier) log() *slog.Logger {
	if v.opts.Logger != nil {
		return v.opts.Logger
	}
	return slog.Default()
}

// Close stops the key set's background refresh. Verify fails after it.
func (v *JWTVerifier) Close() error {
	v.mu.Lock()
	if v.stopKeys != nil {
		v.stopKeys()
	}
	if v.retrying != nil {
		v.retrying.Stop()
	}
	v.mu.Unlock()
	v.cancel()
	return nil
}

// Verify verifies a JWT access token and returns its caller: the subject
// from "sub" (required), the roles from the roles claim, and the token as
// Bearer. It has the shape of server.TokenVerifier (the request is not
// used). The token must be signed with one of the issuer's keys by an
// allowed algorithm, and carry "iss" equal to the issuer, "aud"
// containing the audience, "exp" (required), and "nbf" and "iat" if
// present, all within the leeway.
//
// A refused token yields an error wrapping [auth.ErrInvalidToken] (HTTP
// 401); when keys cannot be had, an *[authz.OutageError] (HTTP 503).
// Neither error holds the token.
func (v *JWTVerifier) Verify(ctx context.Context, token string, _ *http.Request) (authz.Caller, error) {
	c, _, err := v.verify(ctx, token)
	return c, err
}

// Confirmation verifies token as [JWTVerifier.Verify] does, with its
// errors, and returns the key the token is bound to: the "jkt" of its
// "cnf" claim (the JWK SHA-256 thumbprint of RFC 9449 §6.1), or "" for a
// token bound to no key. A "cnf" claim that is not an object, or whose
// "jkt" is not a thumbprint, refuses the token. It has the shape of
// [DPoPOptions].Confirmation.
func (v *JWTVerifier) Confirmation(ctx context.Context, token string) (string, error) {
	_, jkt, err := v.verify(ctx, token)
	return jkt, err
}

// verify is [JWTVerifier.Verify], with the key the token is bound to.
func (v *JWTVerifier) verify(ctx context.Context, token string) (authz.Caller, string, error) {
	if v.ctx.Err() != nil {
		return authz.Caller{}, "", &authz.OutageError{Err: errors.New("oauth: JWTVerifier is closed")}
	}
	now := time.Now()
	if c, jkt, ok := v.cache.get(token, now); ok {
		return c, jkt, nil
	}
	kf, err := v.keyfunc()
	if err != nil {
		return authz.Caller{}, "", err
	}
	claims := jwt.MapClaims{}
	_, err = v.parser.ParseWithClaims(token, claims, func(t *jwt.Token) (any, error) {
		key, err := kf.KeyfuncCtx(ctx)(t)
		if err != nil && (v.down.Load() || !v.hasKeys(ctx, kf)) {
			return nil, &authz.OutageError{Err: fmt.Errorf("oauth: no key of issuer %s to verify the token with, and its key set cannot be fetched: %w", v.opts.Issuer, err)}
		}
		return key, err
	})
	var outage *authz.OutageError
	switch {
	case errors.As(err, &outage):
		return authz.Caller{}, "", outage
	case err != nil:
		v.log().DebugContext(ctx, "oauth: token refused", slog.String("reason", err.Error()))
		return authz.Caller{}, "", fmt.Errorf("oauth: %v: %w", err, auth.ErrInvalidToken)
	}
	c, err := callerFrom(claims, v.roles, v.scopes, token)
	var jkt string
	if err == nil {
		jkt, err = confirmationFrom(claims)
	}
	if err != nil {
		v.log().DebugContext(ctx, "oauth: token refused", slog.String("reason", err.Error()))
		return authz.Caller{}, "", fmt.Errorf("oauth: %v: %w", err, auth.ErrInvalidToken)
	}
	if v.opts.CacheTTL > 0 {
		until := now.Add(v.opts.CacheTTL)
		if exp, err := claims.GetExpirationTime(); err == nil && exp != nil && exp.Before(until) {
			until = exp.Time
		}
		v.cache.put(token, c, jkt, until)
	}
	return c, jkt, nil
}

// Ready reports whether the verifier holds keys to verify tokens with:
// nil if it does, else an error saying why not (the issuer's discovery
// or key set cannot be fetched). It has the shape of
// server.HTTPServerOptions.ReadyCheck, so that /readyz says so. If it
// holds no keys, it starts fetching them (unless a try failed moments ago: the
// background retries back off from 1 to 8 seconds). It never waits for
// the fetch.
func (v *JWTVerifier) Ready(ctx context.Context) error {
	if ks := v.keys.Load(); ks != nil {
		if v.hasKeys(ctx, ks.kf) {
			return nil
		}
		return fmt.Errorf("oauth: the key set of issuer %s holds no usable key", v.opts.Issuer)
	}
	if v.loading.CompareAndSwap(false, true) {
		go func() {
			defer v.loading.Store(false)
			v.keyfunc()
		}()
	}
	if err := v.failure.Load(); err != nil {
		return fmt.Errorf("oauth: no keys of issuer %s to verify tokens with: %w", v.opts.Issuer, *err)
	}
	return fmt.Errorf("oauth: the keys of issuer %s are being fetched", v.opts.Issuer)
}

func (v *JWTVerifier) hasKeys(ctx context.Context, kf keyfunc.Keyfunc) bool {
	all, err := kf.Storage().KeyReadAll(ctx)
	return err == nil && len(all) > 0
}

// keyfunc returns the key set, loading it (discovery, then a first
// fetch) if it is not loaded and v.retry allows a try now. A failure is
// an outage, and schedules the next try. The loading is not bound
// to a request, whose end would otherwise count as the issuer's
// failure.
func (v *JWTVerifier) keyfunc() (keyfunc.Keyfunc, error) {
	if ks := v.keys.Load(); ks != nil {
		return ks.kf, nil
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if ks := v.keys.Load(); ks != nil {
		return ks.kf, nil
	}
	if err := v.ctx.Err(); err != nil {
		return nil, &authz.OutageError{Err: errors.New("oauth: JWTVerifier is closed")}
	}
	if v.retry.wait(time.Now()) > 0 {
		return nil, &authz.OutageError{Err: v.lastErr}
	}
	ctx, cancel := context.WithTimeout(v.ctx, 2*defaultTimeout)
	defer cancel()
	kf, err := v.load(ctx)
	if err != nil {
		v.lastErr = err
		v.failure.Store(&err)
		v.down.Store(true)
		// Try again in the background, so that the verifier (and
		// /readyz) recovers within seconds of the issuer's return even
		// when no request or probe comes: one try in flight (v.mu),
		// backing off to one every few seconds while the issuer is down.
		d := v.retry.failed(time.Now())
		if v.retrying != nil {
			v.retrying.Stop()
		}
		v.retrying = time.AfterFunc(d, func() { v.keyfunc() })
		v.log().WarnContext(ctx, "oauth: cannot fetch the issuer's keys; tokens cannot be verified", slog.String("issuer", v.opts.Issuer), slog.Duration("retry_in", d), slog.Any("error", err))
		return nil, &authz.OutageError{Err: err}
	}
	v.retry.succeeded()
	v.keys.Store(&keySet{kf})
	return kf, nil
}

func (v *JWTVerifier) load(ctx context.Context) (keyfunc.Keyfunc, error) {
	meta, err := discover(ctx, v.client, v.opts.Issuer)
	if err != nil {
		return nil, err
	}
	if meta.JWKSURI == "" {
		return nil, fmt.Errorf("oauth: the metadata of issuer %s has no jwks_uri", v.opts.Issuer)
	}
	// The key set's refresh goroutine lives until the verifier is closed,
	// or this attempt fails.
	kctx, cancel := context.WithCancel(v.ctx)
	noErr := false
	kf, err := keyfunc.NewDefaultOverrideCtx(kctx, []string{meta.JWKSURI}, keyfunc.Override{
		Client:                    v.jwks,
		HTTPTimeout:               defaultTimeout,
		NoErrorReturnFirstHTTPReq: &noErr,
		RefreshInterval:           v.opts.RefreshInterval,
		RefreshUnknownKID:         rate.NewLimiter(rate.Every(v.opts.MinRefreshInterval), 1),
		// A token with an unknown key while the limiter is empty is
		// refused at once, not held until a refetch is allowed.
		RateLimitWaitMax: time.Millisecond,
		RefreshErrorHandlerFunc: func(u string) func(context.Context, error) {
			return func(ctx context.Context, err error) {
				v.down.Store(true)
				v.log().WarnContext(ctx, "oauth: fetching the issuer's key set failed; the keys held keep verifying", slog.String("jwks_uri", u), slog.Any("error", err))
			}
		},
	})
	if err != nil {
		cancel()
		return nil, fmt.Errorf("oauth: fetching the key set of issuer %s: %w", v.opts.Issuer, err)
	}
	v.stopKeys = cancel
	return kf, nil
}

// jwksWatch is the transport of the key set's client: it records whether
// the issuer answers (a failed fetch is reported by the refresh error
// handler), and bounds the size of the key set.
type jwksWatch struct {
	base http.RoundTripper
	v    *JWTVerifier
}

func (t *jwksWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	// jwkset bounds a refetch for an unknown key by the rate limiter's
	// wait, which is kept short so that no request waits on it: the
	// fetch gets a deadline of its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(req.Context()), defaultTimeout)
	resp, err := base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		t.v.down.Store(true)
		return nil, err
	}
	if resp.StatusCode == http.StatusOK {
		t.v.down.Store(false)
	}
	resp.Body = &limitedBody{Reader: io.LimitReader(resp.Body, maxDocument), body: resp.Body, cancel: cancel}
	return resp, nil
}

// limitedBody is a response body read up to a limit, whose request's
// context ends when it is closed.
type limitedBody struct {
	io.Reader
	body   io.Closer
	cancel context.CancelFunc
}

func (b *limitedBody) Close() error {
	err := b.body.Close()
	b.cancel()
	return err
}
