package server

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"path"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/sdkfix/quietcancel"
	"github.com/toolroute/toolroute/internal/sdkfix/sessionclose"
	"github.com/toolroute/toolroute/internal/serve/inflight"
	"github.com/toolroute/toolroute/internal/serve/statelesshttp"
)

// A TokenVerifier checks a bearer token (without its "Bearer " prefix)
// and returns the caller it identifies. An unknown, expired or malformed
// token must yield an error wrapping [ErrInvalidToken]: the request is
// answered with HTTP 401. Any other error means the verifier could not
// decide: the request is answered with HTTP 503 if the error wraps an
// *[authz.OutageError] (the authorization server is unreachable), else
// 500, and the error is logged (with the token, should it appear in the
// error's text, redacted).
//
// If the returned caller's Bearer is empty, it is set to token, so that
// tools forward it upstream.
//
// The server guards every verifier against strangers' tokens (see
// the package doc on strangers' tokens): concurrent requests with one
// token share one verification, and a refused token is refused again for
// a few seconds without asking. So the answer must depend on the token
// alone, not on the request r (which is the first of those requests).
type TokenVerifier func(ctx context.Context, token string, r *http.Request) (authz.Caller, error)

// ErrInvalidToken is the error a [TokenVerifier] wraps to refuse a token.
var ErrInvalidToken = auth.ErrInvalidToken

// errVerifier is what a client is told when a verifier fails.
var errVerifier = errors.New("token verification unavailable")

// StaticTokens returns a TokenVerifier that knows a fixed set of tokens,
// for demos and tests. The map is copied. Tokens are compared by their
// SHA-256 digests, so a lookup's timing tells nothing useful about them.
func StaticTokens(tokens map[string]authz.Caller) TokenVerifier {
	byDigest := make(map[[sha256.Size]byte]authz.Caller, len(tokens))
	for tok, c := range tokens {
		if tok == "" {
			panic("server: StaticTokens: empty token")
		}
		c.Roles = append([]string(nil), c.Roles...)
		byDigest[sha256.Sum256([]byte(tok))] = c
	}
	return func(_ context.Context, token string, _ *http.Request) (authz.Caller, error) {
		c, ok := byDigest[sha256.Sum256([]byte(token))]
		if !ok {
			return authz.Caller{}, ErrInvalidToken
		}
		c.Roles = append([]string(nil), c.Roles...)
		return c, nil
	}
}

// HTTPOptions configures the streamable HTTP endpoint ([HTTPHandler]):
// everything that decides how one request to it is served. What only a
// whole server does (its endpoint's path, health endpoints, readiness,
// draining, serving resource metadata) is in [HTTPServerOptions], so
// that each constructor takes only the options it uses. Every zero field
// selects its default, except Verifier, which is required.
//
// The endpoint reports (a failing verifier, say) through the
// [Options.Logger] and [Options.OnError] of the server it serves, if [New]
// built it (else to [slog.Default]): a service sets them once.
type HTTPOptions struct {
	// Verifier identifies the caller of every request from its bearer
	// token. Required: without a verifier no caller can be identified, and
	// HTTPHandler fails (fail closed). A request without a valid token
	// gets HTTP 401.
	Verifier TokenVerifier
	// Anonymous, if set, is the caller of requests that send no
	// Authorization header at all (a request with an invalid token still
	// gets 401). Off by default; for local tools that cannot send
	// headers. Not with Stateful: an anonymous session could not be bound
	// to its opener, and every caller could use it (HTTPHandler fails).
	Anonymous *authz.Caller
	// ResourceMetadataURL, if set, is announced in the WWW-Authenticate
	// header of 401 answers (OAuth protected resource metadata). Under
	// [HTTPServer], "" selects the well-known URL of
	// [HTTPServerOptions.ResourceMetadata], if set.
	ResourceMetadataURL string

	// Stateful selects stateful sessions (Mcp-Session-Id) instead of the
	// default stateless mode. Stateless serves MCP 2026-07-28 and older
	// clients alike, keeps no state between requests (replicas behind any
	// load balancer need nothing shared), and cancels a call's handler when
	// its HTTP request ends (for clients of every protocol version).
	// Stateful serves only pre-2026 clients, and needs session affinity.
	// A session is bound to the caller that opened it: to its subject,
	// or for a caller without one, to its token.
	Stateful bool
	// SDKTransport serves stateless requests through go-sdk's own
	// streamable HTTP handler alone, rather than through toolroute's
	// transport (package internal/serve/statelesshttp), which serves the
	// plain calls itself and hands every other request to that handler,
	// with answers byte for byte alike, for a fraction of the CPU and
	// memory. It is the way back should a difference show. Ignored when
	// Stateful (stateful sessions are always the SDK's).
	SDKTransport bool
	// SessionTimeout closes a stateful session idle this long. 0 selects
	// 10 minutes; a negative value turns it off (idle sessions stay open).
	// Ignored
	// when stateless.
	SessionTimeout time.Duration
	// MaxSessions bounds the stateful sessions open at once, of all
	// callers; MaxSessionsPerCaller those of one caller (one subject, or
	// one token for a caller without a subject). A request that would
	// open a session past either bound is refused with HTTP 503 (total)
	// or 429 (per caller) and a JSON-RPC error naming the bound; the
	// client may close a session (DELETE) or wait for one to idle out
	// (SessionTimeout). 0 selects 2,000 and 32; a negative value turns
	// the bound off. Ignored when stateless.
	MaxSessions, MaxSessionsPerCaller int
	// MaxRequestBodyBytes limits the size of a request body; larger ones
	// get HTTP 413. 0 selects 4 MiB ([mcp.DefaultMaxRequestBodyBytes]);
	// a negative value turns the limit off, as the SDK's does (and the
	// bound below with it: do not, on a server that strangers can reach).
	// Memory follows the bytes that arrive,
	// never a declared Content-Length; and the bodies being read hold at
	// most 16 times this as a whole beyond the first 64 KiB of each
	// (which nearly every MCP request fits in): past that, a stateless
	// request gets HTTP 503 with Retry-After (a stateful one, 400).
	MaxRequestBodyBytes int64
	// BodyTimeout bounds reading a request's body, counted from when its
	// headers are read: a client that sends headers and then too little
	// of its body (with or without a valid token) has its connection
	// closed then. Only the body's reading is bounded, not the response:
	// a long call's event stream is not. 0 selects 10 seconds; a negative
	// value turns the deadline off.
	BodyTimeout time.Duration

	// Wrap, if set, wraps the endpoint: it sees every request before its
	// caller is identified, and every answer. It is how a scheme other
	// than Bearer reaches the endpoint, such as authz/oauth's DPoP
	// (RFC 9449), which checks a request's proof of possession and hands
	// the request on with its token as a bearer token. nil serves the
	// endpoint as it is.
	Wrap func(endpoint http.Handler) http.Handler
	// StepUp, if set, is asked about every request with a verified
	// bearer token, before it is served: the scopes it returns, if any,
	// are those the request's operation needs and the caller's token
	// lacks some of, and the request is answered HTTP 403 with
	// WWW-Authenticate: Bearer error="insufficient_scope", scope="…" (all
	// of them, in one challenge) and resource_metadata="…" (MCP
	// 2026-07-28's step-up authorization), so that the client asks for a
	// token with more scopes. A challenge tells that the operation
	// exists: StepUp must return nil for a tool the caller cannot see,
	// which must answer as an unknown one (authz/oauth's
	// Scopes.StepUp does). It may read the request's body if it puts
	// back what it read. nil challenges nothing.
	StepUp func(r *http.Request, c authz.Caller) []string

	// Cancellations, if set, carries a 2025 client's
	// notifications/cancelled to the other replicas when the call it
	// names is not in flight in this process, and theirs here (see
	// [Cancellations]). nil cancels calls in this process only. Ignored
	// when Stateful: a session's cancellation reaches its own replica.
	Cancellations Cancellations
}

// HTTPServerOptions configures an [HTTPServer] ([NewHTTPServer], [HTTP]):
// its MCP endpoint (Endpoint, as [HTTPHandler] takes it) and what the
// server adds around it. A separate type rather than more fields of
// [HTTPOptions]: a field that [HTTPHandler] would ignore is a setting
// that silently does nothing, and the type says which constructor uses
// what. Endpoint is a named field rather than an embedded one, so that a
// literal shows which settings are the endpoint's. Like [HTTPOptions], it
// has no Logger or OnError: the server reports through the
// [Options.Logger] and [Options.OnError] of the server it serves. Every
// zero field selects its default.
type HTTPServerOptions struct {
	// Endpoint configures the MCP endpoint. Its Verifier is required.
	Endpoint HTTPOptions

	// Path is where the MCP endpoint is mounted. "" selects "/mcp". It
	// must be a clean path starting with "/", without spaces or
	// wildcards ("{", "}"), other than /healthz and /readyz: NewHTTPServer
	// fails otherwise.
	Path string
	// ResourceMetadata, if set, is served (RFC 9728) at
	// /.well-known/oauth-protected-resource and at that path followed by
	// the endpoint's path, and its well-known URL is announced in 401
	// answers unless Endpoint.ResourceMetadataURL is set. Its Resource
	// must be the MCP endpoint's public URL.
	ResourceMetadata *oauthex.ProtectedResourceMetadata
	// Ready reports whether the server is ready for traffic (/readyz).
	// nil means always ready. Under fx it reports whether every service
	// is warm.
	Ready func() bool
	// ReadyCheck, if set, is asked by /readyz too, for what the server
	// depends on at run time (an authorizer's service: see
	// authz.ReadyChecker): while it returns an error, /readyz answers 503
	// "not ready: a dependency is unavailable", and when it begins and
	// stops failing, the log says so with the error. The error's text
	// stays in the log: it names internal addresses (a proxy's URL, a
	// dial error) that /readyz, served on the public port, must not show. It is asked at most once a second
	// (probes meanwhile get its last answer), and its context ends after
	// 5 seconds.
	ReadyCheck func(ctx context.Context) error
	// DrainDelay is how long Shutdown keeps serving, with /readyz
	// answering 503, before it stops accepting connections, so that load
	// balancers notice first. 0 (the default) stops accepting at once.
	DrainDelay time.Duration
}

// abortGrace is how long a hard shutdown waits, once it has cancelled the
// requests in flight, for their answers to be written.
const abortGrace = time.Second

const (
	defaultPath                 = "/mcp"
	defaultSessionTimeout       = 10 * time.Minute
	defaultMaxSessions          = 2000
	defaultMaxSessionsPerCaller = 32
	defaultBodyTimeout          = 10 * time.Second
)

// endpointPath returns the MCP endpoint's path, or an error naming the option if
// it is not a plain, clean path (http.ServeMux would panic on it, or
// never match it).
func (o *HTTPServerOptions) endpointPath() (string, error) {
	p := o.Path
	if p == "" {
		return defaultPath, nil
	}
	bad := func(why string) (string, error) {
		return "", fmt.Errorf("server: HTTPServerOptions.Path %q %s", p, why)
	}
	switch {
	case !strings.HasPrefix(p, "/"):
		return bad(`must start with "/"`)
	case strings.ContainsFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return bad("must not contain spaces (it is a path, not a pattern with a method)")
	case strings.ContainsAny(p, "{}"):
		return bad(`must not contain "{" or "}" (it is a path, not a pattern with wildcards)`)
	case p != cleanPath(p):
		return bad("must be a clean path (no //, . or .. segments)")
	case p == "/healthz" || p == "/readyz":
		return bad("is taken by the health endpoints")
	}
	return p, nil
}

// cleanPath is path.Clean, keeping a trailing slash.
func cleanPath(p string) string {
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c
}

// HTTPHandler returns the streamable HTTP endpoint serving s: it
// identifies the caller of every request with opts.Verifier (HTTP 401
// for a missing or unknown token), and serves MCP statelessly (unless
// opts.Stateful) with cancellation of a call when its request ends. In
// stateful sessions, a call the client cancels (notifications/cancelled)
// is cancelled too, and gets no response.
// Mount it wherever you like; [HTTPServer] mounts it at /mcp beside
// health endpoints.
//
// The caller reaches the server's middleware through the request's
// auth.TokenInfo; s should be built by [New], whose chain puts it in
// every handler's context, and whose [Options.Logger] and
// [Options.OnError] the handler reports through.
func HTTPHandler(s *mcp.Server, opts HTTPOptions) (http.Handler, error) {
	h, _, _, err := newHTTPHandler(s, opts, reporterOf(s), nil)
	if err != nil {
		return nil, err
	}
	return limitBody(h, opts.bodyTimeout(), opts.maxBody()), nil
}

// newHTTPHandler is [HTTPHandler], with what a stateful handler holds
// open (nil when stateless), and what ends its subscription to
// [HTTPOptions.Cancellations]. It reports through rep. d, if not nil,
// reaches every call (see [drain]): through its request's context, or
// its session's.
func newHTTPHandler(s *mcp.Server, opts HTTPOptions, rep reporter, d *drain) (_ http.Handler, _ *sessionclose.Handler, unsubscribe func(), _ error) {
	if s == nil {
		return nil, nil, nil, errors.New("server: HTTPHandler of a nil *mcp.Server")
	}
	if opts.Verifier == nil {
		return nil, nil, nil, errors.New("server: HTTPOptions.Verifier is nil: set a TokenVerifier (server.StaticTokens for demos) to identify callers")
	}
	if opts.Stateful && opts.Anonymous != nil {
		return nil, nil, nil, errors.New("server: HTTPOptions.Anonymous with Stateful: a session opened without a token cannot be bound to its opener, so any caller could use it; serve anonymous callers statelessly")
	}
	sessionTimeout := opts.SessionTimeout
	switch {
	case sessionTimeout == 0:
		sessionTimeout = defaultSessionTimeout
	case sessionTimeout < 0:
		sessionTimeout = 0
	}
	streamable := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                    !opts.Stateful,
		PropagateRequestCancellation: true,
		SessionTimeout:               sessionTimeout,
		MaxRequestBodyBytes:          opts.MaxRequestBodyBytes, // the same rule as the SDK's
	})
	var mcpHandler http.Handler
	var open *sessionclose.Handler
	unsubscribe = func() {}
	maxBody := opts.maxBody()
	if !opts.Stateful {
		var rel *relay
		if opts.Cancellations != nil {
			rel = newRelay(opts.Cancellations, rep.log)
		}
		serve := func(w http.ResponseWriter, r *http.Request, _ []byte) { streamable.ServeHTTP(w, r) }
		if !opts.SDKTransport {
			serve = statelessTransport(s, streamable, statelesshttp.Options{HeaderParams: rep.headerParams}).Serve
		}
		mcpHandler, unsubscribe = bindCalls(serve, maxBody, rel, d)
	} else {
		peek := cmp.Or(maxBody, mcp.DefaultMaxRequestBodyBytes) // what the workarounds read of a body, at most
		open = sessionclose.New(s, quietcancel.HTTP(streamable, peek), sessionclose.Limits{
			Total:     cmp.Or(bound(opts.MaxSessions, defaultMaxSessions), math.MaxInt),
			PerUser:   cmp.Or(bound(opts.MaxSessionsPerCaller, defaultMaxSessionsPerCaller), math.MaxInt),
			MaxBody:   peek,
			IdleAfter: sessionTimeout,
		})
		mcpHandler = open
		if d != nil {
			t := &transport{drain: d}
			mcpHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				// The drain reaches every call of this request through
				// the session's context.
				open.ServeHTTP(w, r.WithContext(withTransport(r.Context(), t)))
			})
		}
	}
	var endpoint http.Handler = opts.requireBearer(mcpHandler, rep)
	if opts.Anonymous != nil {
		bearer := endpoint
		anon := *opts.Anonymous
		anon.Roles = append([]string(nil), anon.Roles...)
		endpoint = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, ok := r.Header["Authorization"]; ok {
				bearer.ServeHTTP(w, r)
				return
			}
			mcpHandler.ServeHTTP(w, r.WithContext(authz.WithCaller(r.Context(), anon)))
		})
	}
	if opts.Wrap != nil {
		if endpoint = opts.Wrap(endpoint); endpoint == nil {
			return nil, nil, nil, errors.New("server: HTTPOptions.Wrap returned a nil handler")
		}
	}
	return endpoint, open, unsubscribe, nil
}

// statelessTransport is toolroute's stateless transport
// ([HTTPOptions.SDKTransport]); a test counts the handlers it makes.
var statelessTransport = statelesshttp.New

// verifier adapts o.Verifier to the SDK: the caller travels in the
// TokenInfo, and errors never echo the token.
//
// The TokenInfo's UserID binds a stateful session to its opener (the SDK
// refuses a request of another user on it; it binds no session to an
// empty UserID): "sub:" and the caller's subject, or for a caller without
// one (a token mapped to roles only), "tok:" and the hex SHA-256 of the
// token, never empty. Logs show the caller's subject, not the UserID.
// Stateless, there is no session to bind: the UserID stays empty.
// Failures are reported to rep.
func (o *HTTPOptions) verifier(rep reporter) auth.TokenVerifier {
	v, stateful := o.Verifier, o.Stateful
	return func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		c, err := v(ctx, token, r)
		if err != nil {
			if errors.Is(err, ErrInvalidToken) {
				return nil, ErrInvalidToken
			}
			outage := (*authz.OutageError)(nil)
			isOutage := errors.As(err, &outage)
			if isOutage && outage.Err != nil {
				err = fmt.Errorf("%v: %v", err, outage.Err)
			}
			rep.error("toolroute: token verification failed", errors.New(strings.ReplaceAll(err.Error(), token, "[redacted]")))
			if isOutage {
				return nil, errUnavailable
			}
			return nil, errVerifier
		}
		if c.Bearer == "" {
			c.Bearer = token
		}
		info := &auth.TokenInfo{Extra: map[string]any{tokenCallerKey: c}}
		if stateful {
			info.UserID = sessionUser(c.Subject, token)
		}
		return info, nil
	}
}

// sessionUser is the user a stateful session is bound to (see
// [HTTPOptions.verifier]).
func sessionUser(subject, token string) string {
	if subject != "" {
		return "sub:" + subject
	}
	sum := sha256.Sum256([]byte(token))
	return "tok:" + hex.EncodeToString(sum[:])
}

// HTTPServer serves an MCP server over streamable HTTP, with /healthz
// (live: 200 while the process serves) and /readyz (200 when
// [HTTPServerOptions.Ready] and [HTTPServerOptions.ReadyCheck] say so and the server
// is not draining, else 503)
// beside the MCP endpoint. It must be created with [NewHTTPServer].
type HTTPServer struct {
	opts     HTTPServerOptions
	rep      reporter // s's (see [reporterOf])
	handler  http.Handler
	drain    *drain
	requests *inflight.Tracker[*http.Request] // at the MCP endpoint, but standalone streams
	draining atomic.Bool
	sessions *sessionclose.Handler // stateful: what to end at Shutdown; else nil
	check    *readyCheck           // HTTPServerOptions.ReadyCheck, or nil
	// unsubscribe ends the subscription to HTTPOptions.Cancellations, if
	// any (else it does nothing).
	unsubscribe func()

	mu     sync.Mutex
	closed bool // Shutdown was called: Start refuses
	srv    *http.Server
	addr   net.Addr
	served chan struct{} // closed when the http.Server's Serve returned
}

// NewHTTPServer returns an HTTP server for s. It fails as [HTTPHandler]
// does with opts.Endpoint, if [HTTPServerOptions.Path] is not a plain
// path, and if the resource of [HTTPServerOptions.ResourceMetadata] is
// not an absolute http(s) URL. Like [HTTPHandler], it reports through
// the [Options.Logger] and [Options.OnError] of s, if [New] built it.
func NewHTTPServer(s *mcp.Server, opts HTTPServerOptions) (*HTTPServer, error) {
	endpoint, err := opts.endpointPath()
	if err != nil {
		return nil, err
	}
	if err := opts.checkResourceMetadata(); err != nil {
		return nil, err
	}
	if opts.Endpoint.ResourceMetadataURL == "" {
		opts.Endpoint.ResourceMetadataURL = opts.resourceMetadataURL()
	}
	d := newDrain()
	rep := reporterOf(s)
	h, open, unsubscribe, err := newHTTPHandler(s, opts.Endpoint, rep, d)
	if err != nil {
		return nil, err
	}
	hs := &HTTPServer{opts: opts, rep: rep, drain: d, requests: inflight.New[*http.Request](), sessions: open, unsubscribe: unsubscribe}
	if opts.ReadyCheck != nil {
		hs.check = &readyCheck{check: opts.ReadyCheck, log: rep.log}
	}
	mux := http.NewServeMux()
	mux.Handle(endpoint, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			hs.requests.Add(r)
			defer hs.requests.Done(r)
		}
		h.ServeHTTP(w, r)
	}))
	opts.handleResourceMetadata(mux, endpoint)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		switch {
		case hs.draining.Load():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "draining")
		case opts.Ready != nil && !opts.Ready():
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready")
		default:
			if hs.check != nil {
				if err := hs.check.err(r.Context()); err != nil {
					w.WriteHeader(http.StatusServiceUnavailable)
					// The cause is in the log (readyCheck.err).
					fmt.Fprintln(w, notReadyText)
					return
				}
			}
			fmt.Fprintln(w, "ready")
		}
	})
	hs.handler = limitBody(mux, opts.Endpoint.bodyTimeout(), opts.Endpoint.maxBody())
	return hs, nil
}

// notReadyText is /readyz's answer while a ReadyCheck fails.
const notReadyText = "not ready: a dependency is unavailable (the server's log names it)"

// The bounds of [HTTPServerOptions.ReadyCheck].
const (
	readyCheckEvery   = time.Second
	readyCheckTimeout = 5 * time.Second
)

// readyCheck asks a ReadyCheck at most once every readyCheckEvery, and
// logs when it begins and stops failing.
type readyCheck struct {
	check func(context.Context) error
	log   *slog.Logger

	mu   sync.Mutex // held while checking: concurrent probes share the answer
	at   time.Time  // of the last answer; zero before the first
	last error
}

// err returns the check's answer, asking it again if the last one is
// older than readyCheckEvery.
func (c *readyCheck) err(ctx context.Context) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.at.IsZero() && time.Since(c.at) < readyCheckEvery {
		return c.last
	}
	ctx, cancel := context.WithTimeout(ctx, readyCheckTimeout)
	defer cancel()
	err := c.check(ctx)
	switch {
	case err != nil && errors.Is(ctx.Err(), context.Canceled):
		// The probe went away: no answer to keep.
		return err
	case err != nil && c.last == nil:
		c.log.Warn("toolroute: not ready", slog.String("error", err.Error()))
	case err == nil && c.last != nil:
		c.log.Info("toolroute: ready again", slog.String("was", c.last.Error()))
	}
	c.at, c.last = time.Now(), err
	return err
}

// Handler returns the server's handler: the MCP endpoint, /healthz and
// /readyz. Use it to serve through a server of your own (httptest, TLS).
func (h *HTTPServer) Handler() http.Handler { return h.handler }

// bodyTimeout is [HTTPOptions.BodyTimeout]; 0: none.
func (o *HTTPOptions) bodyTimeout() time.Duration { return bound(o.BodyTimeout, defaultBodyTimeout) }

// maxBody is [HTTPOptions.MaxRequestBodyBytes]; 0: none.
func (o *HTTPOptions) maxBody() int64 {
	return bound(o.MaxRequestBodyBytes, mcp.DefaultMaxRequestBodyBytes)
}

// bound applies toolroute's one rule for a bound's option: 0 selects
// def, a negative value turns the bound off, read as 0 (none) here.
func bound[T int | int64 | time.Duration](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// limitBody bounds the reading of every request's body by timeout, from
// now (once its headers are read), and the memory that bodies being
// read hold as a whole (see [bodyBudget]), for requests of at most
// maxBody bytes. A handler that does not read the body (a 401, a health
// check) leaves net/http to discard it after the response, under the
// same deadline. http.Server's ReadTimeout would bound the whole
// request, and so cut a long call's event stream (its background read
// fails, which cancels the request).
func limitBody(h http.Handler, timeout time.Duration, maxBody int64) http.Handler {
	budget := newBodyBudget(maxBody)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			h.ServeHTTP(w, r)
			return
		}
		// A copy: net/http checks its own body after the handler, to
		// close a connection whose body failed.
		r = r.WithContext(r.Context())
		body := &deadlineBody{ReadCloser: r.Body, w: w, budget: budget}
		defer body.release()
		// A writer without deadlines (a test recorder, a wrapping
		// middleware that hides them) is served without one.
		body.timed = timeout > 0 && setReadDeadline(w, time.Now().Add(timeout)) == nil
		r.Body = body
		h.ServeHTTP(w, r)
	})
}

// setReadDeadline sets w's connection's read deadline (t zero: none).
func setReadDeadline(w http.ResponseWriter, t time.Time) error {
	return http.NewResponseController(w).SetReadDeadline(t)
}

// deadlineBody lifts the connection's read deadline once the body is
// read: net/http's reads past the body (detecting a client that leaves)
// must not time out while a long response is written. It charges what
// it reads to the handler's [bodyBudget] until the handler returns.
type deadlineBody struct {
	io.ReadCloser
	w       http.ResponseWriter
	budget  *bodyBudget
	timed   bool  // the read deadline is set: lift it at EOF
	read    int64 // bytes read so far
	charged int64 // of them, charged to budget
	done    bool
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	if b.read-b.charged >= bodyAllowance {
		// Past its allowance, a body reads only what the budget has room
		// for: the bytes read are held (by whoever reads them) until the
		// handler returns. A reader's large buffer reserves no more than
		// one chunk.
		p = p[:min(len(p), budgetChunk)]
		if !b.budget.take(int64(len(p))) {
			return 0, errBodyBudget
		}
		n, err := b.ReadCloser.Read(p)
		b.budget.give(int64(len(p) - n))
		b.charged += int64(n)
		b.read += int64(n)
		return n, b.eof(err)
	}
	if free := bodyAllowance - (b.read - b.charged); int64(len(p)) > free {
		p = p[:free]
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	return n, b.eof(err)
}

func (b *deadlineBody) eof(err error) error {
	if err == io.EOF && !b.done {
		b.done = true
		if b.timed {
			setReadDeadline(b.w, time.Time{})
		}
	}
	return err
}

// release gives the budget back what b charged; its handler has returned.
func (b *deadlineBody) release() { b.budget.give(b.charged) }

// errBodyBudget is a body's read refused because the bodies being read
// hold the whole [bodyBudget]; the request is answered with HTTP 503.
var errBodyBudget = errors.New("server: too much request body data in flight; try again later")

// bodyAllowance is what a request's body may read without charging the
// shared [bodyBudget]: nearly every MCP request fits in it, so that small
// requests are never refused while large ones wait their turn.
const bodyAllowance = 64 << 10

// budgetChunk bounds what one read past the allowance reserves.
const budgetChunk = 32 << 10

// bodyBudget bounds the bytes that request bodies read past their
// allowance hold at once, across all the requests of a handler:
// together with net/http's own per-connection buffers and the
// allowances, it bounds the memory that clients declaring large bodies
// can make the server hold, whatever the Content-Length they declare.
type bodyBudget struct{ left atomic.Int64 }

// bodyBudgetBodies is how many bodies of the largest size allowed may
// be held at once.
const bodyBudgetBodies = 16

func newBodyBudget(maxBody int64) *bodyBudget {
	b := &bodyBudget{}
	if maxBody <= 0 || maxBody > math.MaxInt64/bodyBudgetBodies {
		b.left.Store(math.MaxInt64 / 2) // no limit: no budget either
	} else {
		b.left.Store(bodyBudgetBodies * maxBody)
	}
	return b
}

// take reserves n bytes, or reports false when fewer are left.
func (b *bodyBudget) take(n int64) bool {
	if b.left.Add(-n) < 0 {
		b.left.Add(n)
		return false
	}
	return true
}

// give returns n bytes.
func (b *bodyBudget) give(n int64) {
	if n > 0 {
		b.left.Add(n)
	}
}

// Start listens on addr ("127.0.0.1:0" picks a free port; see
// [HTTPServer.Addr]) and serves in the background until Shutdown. It
// fails if the server was started already, or if Shutdown was called
// (the error then wraps [http.ErrServerClosed]). To serve on a listener
// or a server of your own (TLS, say), serve [HTTPServer.Handler].
func (h *HTTPServer) Start(addr string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return fmt.Errorf("server: HTTPServer started after Shutdown: %w", http.ErrServerClosed)
	}
	if h.srv != nil {
		return errors.New("server: HTTPServer started twice")
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server: listen on %s: %w", addr, err)
	}
	h.srv = &http.Server{Handler: h.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	h.addr = l.Addr()
	h.served = make(chan struct{})
	srv, served := h.srv, h.served
	go func() {
		defer close(served)
		if err := srv.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
			h.rep.error("toolroute: HTTP server failed", err)
		}
	}()
	return nil
}

// Addr returns the address the server listens on, or "" before Start.
func (h *HTTPServer) Addr() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.addr == nil {
		return ""
	}
	return h.addr.String()
}

// URL returns the MCP endpoint's URL ("http://ADDR/mcp"), or "" before
// Start.
func (h *HTTPServer) URL() string {
	addr := h.Addr()
	if addr == "" {
		return ""
	}
	endpoint, _ := h.opts.endpointPath() // checked by NewHTTPServer
	return "http://" + addr + endpoint
}

// Shutdown stops the server gracefully: /readyz answers 503 at once;
// after [HTTPServerOptions.DrainDelay] the server stops accepting connections
// and new calls, and waits for in-flight requests to finish. When ctx is
// done first, the requests still running are cancelled (their context's
// cause is [ErrShuttingDown]): tool calls, and any other, such as a
// tools/list waiting on its authorizer. Their answers (the calls' errors)
// are written before the connections close, for at most a second; then
// connections are closed, and ctx's error is returned. Shutdown returns
// then even if a handler ignores its context (and so holds its stateful
// session open).
//
// With [HTTPOptions.Stateful], new sessions are refused (503) once the
// server stops accepting, the sessions' standalone event streams (which
// never end on their own) end once the in-flight calls are done, and then
// the sessions are closed: a client reconnects to another replica and
// opens a new session there.
//
// Once Shutdown is called, Start fails.
func (h *HTTPServer) Shutdown(ctx context.Context) error {
	return h.shutdown(ctx, h.opts.DrainDelay)
}

// shutdown is [HTTPServer.Shutdown] after a drain delay of delay rather
// than the configured one.
func (h *HTTPServer) shutdown(ctx context.Context, delay time.Duration) error {
	h.mu.Lock()
	h.closed = true
	h.mu.Unlock()
	h.draining.Store(true)
	if d := delay; d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
		}
	}
	h.mu.Lock()
	srv, served := h.srv, h.served
	h.mu.Unlock()
	if h.sessions != nil {
		h.sessions.StopOpening()
	}
	shut := make(chan error, 1)
	if srv != nil {
		go func() { shut <- srv.Shutdown(ctx) }()
	} else {
		shut <- nil
	}
	// Calls run in requests, and in stateful sessions outside any.
	h.drain.Close()
	err := h.drain.Wait(ctx)
	if err != nil {
		h.drain.Abort()
		// Every call in flight is answered, with its error, before the
		// connections close: a handler that honours its context returns
		// at once, and its answer is written on its request.
		grace, cancel := context.WithTimeout(context.WithoutCancel(ctx), abortGrace)
		h.requests.Wait(grace)
		cancel()
	}
	// A stateful session's standalone stream never ends on its own, and
	// a client whose stream ends reconnects it, or gives up the session
	// with every call in flight: end it once the calls are answered.
	if h.sessions != nil {
		h.sessions.WaitRequests(ctx)
		h.sessions.EndStreams()
	}
	if serr := <-shut; err == nil {
		err = serr
	}
	// Whatever still runs (requests other than calls, past ctx) ends now.
	h.drain.Abort()
	if h.sessions != nil {
		h.sessions.CloseAll(ctx)
	}
	if srv != nil {
		if err != nil {
			srv.Close()
		}
		<-served
	}
	h.unsubscribe()
	return err
}
