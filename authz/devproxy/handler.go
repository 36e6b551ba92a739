package devproxy

import (
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/tool"
)

// The defaults of [Options]' zero fields.
const (
	// DefaultAuthPath is the path of the single-decision endpoint, as
	// [authz.ProxyAuth] asks it by default.
	DefaultAuthPath = "/api/v3/auth"
	// DefaultRoutesPath is the path of the batch endpoint, as
	// [authz.ProxyAuth] asks it by default.
	DefaultRoutesPath = "/api/v3/auth-routes"
	// DefaultMaxRoutes is the number of routes one batch may ask about.
	DefaultMaxRoutes = 10_000
	// DefaultMaxBodyBytes bounds the body of a batch request.
	DefaultMaxBodyBytes = 1 << 20
)

// Options configures a [Handler]. The zero value selects the defaults.
type Options struct {
	// AuthPath is the path of the single-decision endpoint. "" selects
	// [DefaultAuthPath].
	AuthPath string
	// RoutesPath is the path of the batch endpoint. "" selects
	// [DefaultRoutesPath].
	RoutesPath string
	// MaxRoutes bounds the routes of one batch request (duplicates
	// count); a longer batch is answered 413. 0 selects
	// [DefaultMaxRoutes].
	MaxRoutes int
	// MaxBodyBytes bounds the body of a batch request; a longer body is
	// answered 413 once that many bytes have arrived, whatever its
	// Content-Length says. 0 selects [DefaultMaxBodyBytes].
	MaxBodyBytes int64
	// Logger receives one record per request: the decision (subject,
	// route or number of routes, result) or why there is none. Tokens
	// are never logged. nil logs nothing.
	Logger *slog.Logger
}

// Handler answers the RBAC proxy's auth API (see the package
// documentation) from a role policy and static tokens. Create it with
// [New]; it is safe for concurrent use.
type Handler struct {
	policy     *authz.Policy
	callers    map[[sha256.Size]byte]authz.Caller
	authPath   string
	routesPath string
	maxRoutes  int
	maxBody    int64
	log        *slog.Logger
}

// New returns a Handler that decides with policy for the callers of
// tokens. The tokens must pass [tokenfile.Check] against the policy's
// roles (as those [tokenfile.Read] returns for them do); New returns
// every problem otherwise, and an error for a nil policy or an invalid
// option.
func New(policy *authz.Policy, tokens []tokenfile.Entry, opts Options) (*Handler, error) {
	if policy == nil {
		return nil, errors.New("devproxy: New: nil policy")
	}
	roles := policy.Roles()
	if roles == nil {
		roles = []string{} // a policy without roles: every role is unknown
	}
	if err := tokenfile.Check(tokens, roles); err != nil {
		return nil, fmt.Errorf("devproxy: New: %w", err)
	}
	h := &Handler{
		policy:     policy,
		callers:    make(map[[sha256.Size]byte]authz.Caller, len(tokens)),
		authPath:   opts.AuthPath,
		routesPath: opts.RoutesPath,
		maxRoutes:  opts.MaxRoutes,
		maxBody:    opts.MaxBodyBytes,
		log:        opts.Logger,
	}
	if h.authPath == "" {
		h.authPath = DefaultAuthPath
	}
	if h.routesPath == "" {
		h.routesPath = DefaultRoutesPath
	}
	switch {
	case !strings.HasPrefix(h.authPath, "/"):
		return nil, fmt.Errorf("devproxy: Options.AuthPath %q must begin with \"/\"", h.authPath)
	case !strings.HasPrefix(h.routesPath, "/"):
		return nil, fmt.Errorf("devproxy: Options.RoutesPath %q must begin with \"/\"", h.routesPath)
	case h.authPath == h.routesPath:
		return nil, fmt.Errorf("devproxy: Options.AuthPath and Options.RoutesPath are both %q: the endpoints need paths of their own", h.authPath)
	case h.maxRoutes < 0:
		return nil, fmt.Errorf("devproxy: Options.MaxRoutes is %d: want 0 (the default, %d) or a positive number", h.maxRoutes, DefaultMaxRoutes)
	case h.maxBody < 0:
		return nil, fmt.Errorf("devproxy: Options.MaxBodyBytes is %d: want 0 (the default, %d) or a positive number", h.maxBody, DefaultMaxBodyBytes)
	}
	if h.maxRoutes == 0 {
		h.maxRoutes = DefaultMaxRoutes
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	for tok, c := range tokenfile.Callers(tokens) {
		h.callers[sha256.Sum256([]byte(tok))] = c
	}
	return h, nil
}

// ServeHTTP answers the single-decision endpoint and the batch endpoint,
// and 404 for any other path.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var single bool
	switch r.URL.Path {
	case h.authPath:
		single = true
	case h.routesPath:
	default:
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, fmt.Sprintf("method %s not allowed: the auth API takes POST", truncate.String(r.Method)), http.StatusMethodNotAllowed)
		return
	}
	c, ok := h.caller(w, r)
	if !ok {
		return
	}
	if single {
		h.decide(w, r, c)
	} else {
		h.decideMany(w, r, c)
	}
}

// caller returns the caller of r's bearer token, or answers r (400 or
// 401) and returns false.
func (h *Handler) caller(w http.ResponseWriter, r *http.Request) (authz.Caller, bool) {
	refuse := func(reason, challenge string) (authz.Caller, bool) {
		h.log.InfoContext(r.Context(), "dev-proxy: unauthenticated", slog.String("endpoint", r.URL.Path), slog.String("reason", reason), slog.String("remote", r.RemoteAddr))
		w.Header().Set("WWW-Authenticate", challenge)
		http.Error(w, reason, http.StatusUnauthorized)
		return authz.Caller{}, false
	}
	auth := r.Header.Values("Authorization")
	switch {
	case len(auth) > 1:
		h.badRequest(w, r, authz.Caller{}, http.StatusBadRequest, "more than one Authorization header")
		return authz.Caller{}, false
	case len(auth) == 0:
		return refuse("no bearer token: send Authorization: Bearer TOKEN", `Bearer realm="dev-proxy"`)
	}
	f := strings.Fields(auth[0])
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return refuse("no bearer token: the Authorization header must be \"Bearer TOKEN\"", `Bearer realm="dev-proxy"`)
	}
	c, ok := h.callers[sha256.Sum256([]byte(f[1]))]
	if !ok {
		return refuse("unknown bearer token: it is not in the tokens file", `Bearer realm="dev-proxy", error="invalid_token"`)
	}
	return c, true
}

// badRequest answers r with status and msg, and logs why.
func (h *Handler) badRequest(w http.ResponseWriter, r *http.Request, c authz.Caller, status int, msg string) {
	h.log.InfoContext(r.Context(), "dev-proxy: bad request", slog.String("endpoint", r.URL.Path), slog.String("subject", c.Subject), slog.Int("status", status), slog.String("error", msg))
	http.Error(w, msg, status)
}

// decide answers the single-decision endpoint: X-Forwarded-Uri (its
// path, without the query) and X-Forwarded-Method are the request to
// decide, as concrete as the proxy sees it.
func (h *Handler) decide(w http.ResponseWriter, r *http.Request, c authz.Caller) {
	uri, err := oneHeader(r, "X-Forwarded-Uri", "the request's path, e.g. /catalog/api/v1/items/42")
	if err == nil {
		uri, _, _ = strings.Cut(uri, "?")
		err = checkPath("X-Forwarded-Uri", uri)
	}
	var method string
	if err == nil {
		method, err = oneHeader(r, "X-Forwarded-Method", "the request's method, e.g. GET")
	}
	if err == nil {
		err = checkMethod("X-Forwarded-Method", method)
	}
	if err != nil {
		h.badRequest(w, r, c, http.StatusBadRequest, err.Error())
		return
	}
	route := tool.Route{URI: uri, Method: method}
	allowed := h.policy.Allow(r.Context(), c, route) == nil
	h.log.InfoContext(r.Context(), "dev-proxy: decision", slog.String("subject", c.Subject), slog.String("route", route.String()), slog.Bool("allowed", allowed))
	if !allowed {
		http.Error(w, "denied: no role of the caller allows "+route.String(), http.StatusForbidden)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// oneHeader returns r's only value of the header name, or an error
// naming it and what it must hold.
func oneHeader(r *http.Request, name, want string) (string, error) {
	switch v := r.Header.Values(name); len(v) {
	case 0:
		return "", fmt.Errorf("no %s header: want %s", name, want)
	case 1:
		return v[0], nil
	}
	return "", fmt.Errorf("more than one %s header: want one, %s", name, want)
}

// methods are the methods a route may have (those of [tool.Route] and
// of an [authz.AccessPolicy]).
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

func checkMethod(what, m string) error {
	for _, k := range methods {
		if m == k {
			return nil
		}
	}
	return fmt.Errorf("%s %q is not an upper-case HTTP method: want one of %s", what, truncate.String(m), strings.Join(methods, ", "))
}

// checkPath refuses a path the policy cannot judge soundly: one that
// does not begin with "/", holds white space, a control character or a
// fragment, or a dot segment ("." or "..", escaped or not), which the
// upstream would resolve into a path other than the one decided.
func checkPath(what, p string) error {
	q := truncate.String(p)
	switch {
	case p == "":
		return fmt.Errorf("%s is empty: want a path beginning with \"/\"", what)
	case p[0] != '/':
		return fmt.Errorf("%s %q does not begin with \"/\": want a path, service prefix included, e.g. /catalog/api/v1/items/42", what, q)
	case strings.ContainsFunc(p, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("%s %q holds white space or a control character: escape it (%%20)", what, q)
	case strings.ContainsRune(p, '#'):
		return fmt.Errorf("%s %q holds a fragment (#): send the path alone", what, q)
	}
	for _, seg := range strings.Split(p, "/") {
		if isDotSegment(seg) {
			return fmt.Errorf("%s %q holds a dot segment (%q): send the normalised path", what, q, truncate.String(seg))
		}
	}
	return nil
}

// isDotSegment reports whether seg is "." or "..", percent-encoded up to
// a few times ("%2e", "%252E").
func isDotSegment(seg string) bool {
	for range 4 {
		if seg == "." || seg == ".." {
			return true
		}
		d, err := url.PathUnescape(seg)
		if err != nil || d == seg {
			return false
		}
		seg = d
	}
	return false
}

// routeQuery is one route of a batch request.
type routeQuery struct {
	Path   string `json:"path"`
	Method string `json:"method"`
}

// routeAnswer is one route of a batch answer.
type routeAnswer struct {
	Path       string `json:"path"`
	Method     string `json:"method"`
	AuthResult bool   `json:"authResult"`
}

// wantBatch is what a batch request's body must hold, for errors.
const wantBatch = `want a JSON array of {"path", "method"}`

// decideMany answers the batch endpoint: one answer per route asked, in
// the order asked (a duplicate is answered again, decided once).
func (h *Handler) decideMany(w http.ResponseWriter, r *http.Request, c authz.Caller) {
	routes, status, err := h.readBatch(w, r)
	if err != nil {
		h.badRequest(w, r, c, status, err.Error())
		return
	}
	index := make(map[tool.Route]int, len(routes))
	var distinct []tool.Route
	for _, rt := range routes {
		if _, ok := index[rt]; !ok {
			index[rt] = len(distinct)
			distinct = append(distinct, rt)
		}
	}
	decided, err := h.policy.AllowMany(r.Context(), c, distinct)
	if err != nil {
		// A caller of the tokens file has a subject: Policy decides.
		h.log.ErrorContext(r.Context(), "dev-proxy: the policy did not decide", slog.String("subject", c.Subject), slog.String("error", err.Error()))
		http.Error(w, "the policy did not decide", http.StatusInternalServerError)
		return
	}
	answer := make([]routeAnswer, len(routes))
	allowed := 0
	for i, rt := range routes {
		answer[i] = routeAnswer{Path: rt.URI, Method: rt.Method, AuthResult: decided[index[rt]]}
		if answer[i].AuthResult {
			allowed++
		}
	}
	h.log.InfoContext(r.Context(), "dev-proxy: batch decision", slog.String("subject", c.Subject), slog.Int("routes", len(routes)), slog.Int("distinct", len(distinct)), slog.Int("allowed", allowed))
	if len(routes) > 0 && allowed == 0 {
		http.Error(w, "denied: no role of the caller allows any of the routes", http.StatusForbidden)
		return
	}
	body, err := json.Marshal(answer)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(body, '\n'))
}

// readBatch decodes the routes of a batch request, one at a time as
// their bytes arrive, or returns the status and error to answer with:
// 413 past the body's or the batch's bound, 400 for anything malformed.
func (h *Handler) readBatch(w http.ResponseWriter, r *http.Request) ([]tool.Route, int, error) {
	body := http.MaxBytesReader(w, r.Body, h.maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	fail := func(where string, err error) ([]tool.Route, int, error) {
		var tooBig *http.MaxBytesError
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &tooBig):
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("the batch request's body exceeds %d bytes: ask about fewer routes at once", h.maxBody)
		case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
			return nil, http.StatusBadRequest, fmt.Errorf("the body ends early: %s", wantBatch)
		case errors.As(err, &syn):
			return nil, http.StatusBadRequest, fmt.Errorf("invalid JSON at offset %d: %s: %s", syn.Offset, strings.TrimPrefix(syn.Error(), "json: "), wantBatch)
		case errors.As(err, &typ) && typ.Field != "":
			return nil, http.StatusBadRequest, fmt.Errorf("%s.%s: want a string, got a JSON %s", where, typ.Field, typ.Value)
		case errors.As(err, &typ):
			return nil, http.StatusBadRequest, fmt.Errorf("%s: want an object {\"path\", \"method\"}, got a JSON %s", where, typ.Value)
		}
		// An unknown field, or the body could not be read.
		return nil, http.StatusBadRequest, fmt.Errorf("%s: %s: %s", where, truncate.Quoted(strings.TrimPrefix(err.Error(), "json: ")), wantBatch)
	}
	tok, err := dec.Token()
	if err != nil {
		return fail("the body", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, http.StatusBadRequest, fmt.Errorf("the body is not an array: %s", wantBatch)
	}
	var routes []tool.Route
	for i := 0; dec.More(); i++ {
		if i == h.maxRoutes {
			return nil, http.StatusRequestEntityTooLarge, fmt.Errorf("more than %d routes in one batch: ask about fewer at once", h.maxRoutes)
		}
		where := fmt.Sprintf("routes[%d]", i)
		var q routeQuery
		if err := dec.Decode(&q); err != nil {
			return fail(where, err)
		}
		if err := checkPath(where+".path", q.Path); err != nil {
			return nil, http.StatusBadRequest, err
		}
		if strings.ContainsRune(q.Path, '?') {
			return nil, http.StatusBadRequest, fmt.Errorf("%s.path %q holds a query (?): a route is a path and a method", where, truncate.String(q.Path))
		}
		if q.Method == "" {
			return nil, http.StatusBadRequest, fmt.Errorf("%s.method is missing: want an upper-case HTTP method, e.g. GET", where)
		}
		if err := checkMethod(where+".method", q.Method); err != nil {
			return nil, http.StatusBadRequest, err
		}
		routes = append(routes, tool.Route{URI: q.Path, Method: q.Method})
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return fail("the body", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return fail("the body", err)
		}
		return nil, http.StatusBadRequest, fmt.Errorf("data after the array: %s, alone", wantBatch)
	}
	return routes, 0, nil
}
