package oauth

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-jose/go-jose/v4"
)

// The defaults and bounds of [DPoPOptions].
const (
	// DefaultDPoPWindow is the DPoPOptions.Window that 0 selects: a
	// proof's "iat" may be this far from the server's clock, either way
	// (SEP-1932's ±5 minutes).
	DefaultDPoPWindow = 5 * time.Minute
	// MaxDPoPProof is the longest DPoP header a [DPoP] reads, in bytes:
	// a longer one is refused unread.
	MaxDPoPProof = 8 << 10

	defaultReplayMax = 100_000
	maxJTI           = 256
)

// ErrDPoPReplayStore is what [DPoP] reports when its [ReplayCache]
// cannot record a proof (Redis is down, the memory is full): the request
// is answered 503 with Retry-After, never let in, as a proof that cannot
// be recorded could be replayed.
var ErrDPoPReplayStore = errors.New("oauth: the DPoP replay cache cannot record the proof")

// ReplayCache records the proofs a [DPoP] has accepted, so that each is
// accepted once: in this process ([NewReplayCache]) or shared by every
// replica (redisstore.ReplayCache on Redis).
type ReplayCache interface {
	// Use records id until until and reports whether it was new (false:
	// it was recorded already, the proof is a replay). An error means it
	// could not tell: the proof is refused.
	Use(ctx context.Context, id string, until time.Time) (first bool, err error)
}

// DPoPOptions configures a [DPoP]. Confirmation is required; every other
// zero field selects its default.
type DPoPOptions struct {
	// Confirmation verifies an access token and returns the key it is
	// bound to ("" for a token bound to none): a [JWTVerifier]'s
	// Confirmation, with its errors. A token it refuses or cannot verify
	// (an outage) is handed on to the endpoint unchecked, which verifies
	// it again and answers as it answers any such token.
	Confirmation func(ctx context.Context, token string) (jkt string, err error)
	// URL is the MCP endpoint's public URL, which a proof's "htu" must
	// name (query and fragment aside). "" selects the URL of each
	// request as the server sees it (scheme, Host header, path): set it
	// behind a proxy that rewrites any of them.
	URL string
	// ResourceMetadataURL, if set, is named in the challenges DPoP
	// answers itself (the server's own 401 answers name it already).
	ResourceMetadataURL string
	// Required refuses bearer tokens: every request must present a
	// DPoP-bound token with its proof. Off, a token bound to no key may
	// still be presented as a bearer token (a token bound to a key never
	// may).
	Required bool
	// Algorithms are the accepted proof signature algorithms, announced
	// in the challenges' "algs". nil selects [DefaultAlgorithms]; "none"
	// and HS* are refused.
	Algorithms []string
	// Window is how far a proof's "iat" may be from now, before or
	// after. 0 selects [DefaultDPoPWindow]; it cannot be turned off.
	Window time.Duration
	// Replay records accepted proofs. nil selects [NewReplayCache] with
	// its default size: this process only, so that a proof accepted by
	// one replica may be replayed at another within the window; give
	// every replica a shared one (redisstore.ReplayCache) to prevent it.
	Replay ReplayCache
	// Logger receives why proofs are refused (debug) and the replay
	// cache's failures (warn). Tokens and proofs are never logged. nil
	// selects [slog.Default].
	Logger *slog.Logger
}

// DPoP checks DPoP proofs of possession (RFC 9449, MCP's SEP-1932) in
// front of a server's MCP endpoint: a request presenting its token with
// the DPoP scheme (Authorization: DPoP TOKEN) must carry one DPoP header
// holding a proof that
//
//   - is a JWT of type "dpop+jwt", signed by an accepted asymmetric
//     algorithm with the public key in its "jwk" header;
//   - names the request's method ("htm") and URL ("htu");
//   - was issued ("iat") within the window around now;
//   - carries the token's hash ("ath");
//   - is new: its "jti" was not accepted before (for that key) within
//     the window;
//
// and the token, once verified, must be bound to the proof's key (its
// "cnf" claim's "jkt" is the key's thumbprint). Such a request is handed
// on with its token as a bearer token, for the endpoint to verify as it
// verifies any. A token bound to a key presented as a bearer token is
// refused, and with [DPoPOptions].Required every bearer token is.
//
// A refused request is answered 401 with a WWW-Authenticate: DPoP
// challenge naming the error ("invalid_dpop_proof" for the proof,
// "invalid_token" for the binding) and the accepted algorithms; a proof
// that the replay cache cannot record, 503 with Retry-After. Every 401
// the endpoint answers itself gets that challenge too, beside its Bearer
// one, so that a client learns it may use DPoP.
//
// Server-provided nonces (RFC 9449 §8) are not issued: replay is bounded
// by the window and the replay cache. DPoP must be created with
// [NewDPoP]; it is safe for concurrent use. Put its
// [DPoP.Handler] in server.HTTPOptions.Wrap.
type DPoP struct {
	opts   DPoPOptions
	algs   []jose.SignatureAlgorithm
	algsHd string // the challenges' algs parameter
	want   *url.URL
}

// NewDPoP returns a DPoP for opts, or an error naming the option that is
// wrong.
func NewDPoP(opts DPoPOptions) (*DPoP, error) {
	if opts.Confirmation == nil {
		return nil, errors.New("oauth: DPoPOptions.Confirmation is nil: give the token verifier's Confirmation (JWTVerifier.Confirmation), which says what key a token is bound to")
	}
	names := opts.Algorithms
	if names == nil {
		names = asymmetric
	}
	if len(names) == 0 {
		return nil, errors.New("oauth: DPoPOptions.Algorithms is empty: no proof could be verified")
	}
	d := &DPoP{opts: opts}
	for _, a := range names {
		if !slices.Contains(asymmetric, a) {
			return nil, fmt.Errorf("oauth: DPoPOptions.Algorithms: %q is not an asymmetric signature algorithm (one of %s)", a, strings.Join(asymmetric, ", "))
		}
		d.algs = append(d.algs, jose.SignatureAlgorithm(a))
	}
	d.algsHd = strings.Join(names, " ")
	switch {
	case opts.Window < 0:
		return nil, fmt.Errorf("oauth: DPoPOptions.Window %s is negative: a proof's age cannot go unchecked (0 selects %s)", opts.Window, DefaultDPoPWindow)
	case opts.Window == 0:
		d.opts.Window = DefaultDPoPWindow
	}
	if opts.URL != "" {
		u, err := url.Parse(opts.URL)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, fmt.Errorf("oauth: DPoPOptions.URL %q is not an absolute http(s) URL: give the MCP endpoint's public URL", opts.URL)
		}
		d.want = normalURL(u)
	}
	if d.opts.Replay == nil {
		d.opts.Replay = NewReplayCache(0)
	}
	return d, nil
}

func (d *DPoP) log() *slog.Logger {
	if d.opts.Logger != nil {
		return d.opts.Logger
	}
	return slog.Default()
}

// Handler returns next behind the proof check (see [DPoP]).
func (d *DPoP) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &challengeWriter{ResponseWriter: w, challenge: d.challenge("", "")}
		auths := r.Header.Values("Authorization")
		if len(auths) != 1 {
			// None: the endpoint answers 401 (or serves an anonymous
			// caller); several: it answers 400.
			next.ServeHTTP(cw, r)
			return
		}
		scheme, token, ok := strings.Cut(strings.TrimSpace(auths[0]), " ")
		token = strings.TrimSpace(token)
		switch {
		case ok && strings.EqualFold(scheme, "DPoP") && token != "" && !strings.ContainsAny(token, " \t"):
			d.serveDPoP(w, cw, r, token, next)
		case ok && strings.EqualFold(scheme, "Bearer"):
			if d.opts.Required {
				d.refuse(w, "invalid_token", "this server accepts DPoP-bound tokens only: present the token with the DPoP scheme and a DPoP proof")
				return
			}
			// A token bound to a key is never a bearer token (RFC 9449
			// §7.2). A token that cannot be verified is the endpoint's
			// to answer.
			if jkt, err := d.opts.Confirmation(r.Context(), token); err == nil && jkt != "" {
				d.refuse(w, "invalid_token", "the token is DPoP-bound: present it with the DPoP scheme and a DPoP proof, not as a bearer token")
				return
			}
			next.ServeHTTP(cw, r)
		default:
			next.ServeHTTP(cw, r)
		}
	})
}

// serveDPoP checks a request that presents token with the DPoP scheme,
// and hands it on with token as a bearer token.
func (d *DPoP) serveDPoP(w http.ResponseWriter, cw *challengeWriter, r *http.Request, token string, next http.Handler) {
	ctx := r.Context()
	proofs := r.Header.Values("DPoP")
	if len(proofs) != 1 {
		d.refuse(w, "invalid_dpop_proof", fmt.Sprintf("want one DPoP header with a proof, got %d", len(proofs)))
		return
	}
	p, err := d.check(proofs[0], r.Method, d.requestURL(r), token, time.Now())
	if err != nil {
		d.log().DebugContext(ctx, "oauth: DPoP proof refused", slog.String("reason", err.Error()))
		d.refuse(w, "invalid_dpop_proof", err.Error())
		return
	}
	jkt, err := d.opts.Confirmation(ctx, token)
	if err != nil {
		// Refused or not verifiable now: the endpoint verifies the token
		// again, through its guard, and answers (401, 429, 503). No
		// proof is recorded for a token not known to be valid.
		hand(next, cw, r, token)
		return
	}
	if jkt != p.jkt {
		why := "the token is bound to another key than the DPoP proof's"
		if jkt == "" {
			why = "the token is not DPoP-bound: present it as a bearer token"
		}
		d.log().DebugContext(ctx, "oauth: DPoP proof refused", slog.String("reason", why))
		d.refuse(w, "invalid_token", why)
		return
	}
	first, err := d.opts.Replay.Use(ctx, p.id, p.until)
	switch {
	case err != nil:
		d.log().WarnContext(ctx, "oauth: the DPoP replay cache cannot record a proof; refusing it", slog.Any("error", err))
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the DPoP proof cannot be checked now; try again later", http.StatusServiceUnavailable)
		return
	case !first:
		d.log().DebugContext(ctx, "oauth: DPoP proof refused", slog.String("reason", "replayed"))
		d.refuse(w, "invalid_dpop_proof", "the DPoP proof was used already: send a new proof (a new jti) with every request")
		return
	}
	hand(next, cw, r, token)
}

// hand serves r to next with token as its bearer token.
func hand(next http.Handler, w http.ResponseWriter, r *http.Request, token string) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+token)
	r.Header.Del("DPoP")
	next.ServeHTTP(w, r)
}

// refuse answers 401 with a DPoP challenge naming code and why.
func (d *DPoP) refuse(w http.ResponseWriter, code, why string) {
	w.Header().Set("WWW-Authenticate", d.challenge(code, why))
	http.Error(w, why, http.StatusUnauthorized)
}

// challenge is a WWW-Authenticate: DPoP value, with an error code and
// its description if code is set (RFC 9449 §7.1).
func (d *DPoP) challenge(code, why string) string {
	var params []string
	if code != "" {
		params = append(params, "error="+strconv.Quote(code), "error_description="+quoteParam(why))
	}
	if d.opts.ResourceMetadataURL != "" {
		params = append(params, "resource_metadata="+strconv.Quote(d.opts.ResourceMetadataURL))
	}
	params = append(params, "algs="+strconv.Quote(d.algsHd))
	return "DPoP " + strings.Join(params, ", ")
}

// quoteParam quotes s as an auth-param's quoted-string: printable ASCII,
// without '"' or '\' (RFC 6750 §3's rule for error_description).
func quoteParam(s string) string {
	return `"` + strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' || r == '"' || r == '\\' {
			return '\''
		}
		return r
	}, s) + `"`
}

// requestURL is the URL a proof's htu must name for r.
func (d *DPoP) requestURL(r *http.Request) *url.URL {
	if d.want != nil {
		return d.want
	}
	u := &url.URL{Scheme: "http", Host: r.Host, Path: r.URL.Path, RawPath: r.URL.RawPath}
	if r.TLS != nil {
		u.Scheme = "https"
	}
	return normalURL(u)
}

// normalURL is u without query and fragment, its scheme and host in
// lower case, without the scheme's default port, and with "/" for an
// empty path (RFC 9449 §4.3's comparison, RFC 3986 §6.2.2–3).
func normalURL(u *url.URL) *url.URL {
	n := &url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path, RawPath: u.RawPath}
	if port := n.Port(); (n.Scheme == "https" && port == "443") || (n.Scheme == "http" && port == "80") {
		n.Host = n.Hostname()
		if strings.Contains(n.Host, ":") {
			n.Host = "[" + n.Host + "]"
		}
	}
	if n.Path == "" {
		n.Path, n.RawPath = "/", ""
	}
	return n
}

// proof is what an accepted proof is remembered by.
type proof struct {
	jkt   string    // the thumbprint of its key
	id    string    // its replay cache key: a digest of jkt and jti
	until time.Time // how long it must be remembered
}

// proofClaims are the claims of a DPoP proof this package reads.
type proofClaims struct {
	JTI string          `json:"jti"`
	HTM string          `json:"htm"`
	HTU string          `json:"htu"`
	IAT json.RawMessage `json:"iat"`
	ATH string          `json:"ath"`
}

// check verifies the proof raw for a request of method to u presenting
// token, at now (RFC 9449 §4.3, but the replay and the binding).
func (d *DPoP) check(raw, method string, u *url.URL, token string, now time.Time) (proof, error) {
	if len(raw) > MaxDPoPProof {
		return proof{}, fmt.Errorf("the DPoP proof exceeds %d bytes", MaxDPoPProof)
	}
	jws, err := jose.ParseSignedCompact(raw, d.algs)
	if err != nil {
		return proof{}, fmt.Errorf("the DPoP proof is not a JWS of an accepted algorithm (%s)", d.algsHd)
	}
	if len(jws.Signatures) != 1 {
		return proof{}, errors.New("the DPoP proof must have one signature")
	}
	h := jws.Signatures[0].Protected
	if typ, _ := h.ExtraHeaders[jose.HeaderType].(string); typ != "dpop+jwt" {
		return proof{}, errors.New(`the DPoP proof's "typ" header is not "dpop+jwt"`)
	}
	key := h.JSONWebKey
	if key == nil || !key.Valid() || !key.IsPublic() {
		return proof{}, errors.New(`the DPoP proof's "jwk" header is not a public key`)
	}
	if err := checkProofKey(key.Key); err != nil {
		return proof{}, err
	}
	payload, err := jws.Verify(key)
	if err != nil {
		return proof{}, errors.New(`the DPoP proof's signature does not verify with its "jwk"`)
	}
	var c proofClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		return proof{}, errors.New("the DPoP proof's claims are not a JSON object of the claims of RFC 9449")
	}
	switch {
	case c.JTI == "" || len(c.JTI) > maxJTI:
		return proof{}, fmt.Errorf(`the DPoP proof's "jti" is missing or longer than %d bytes`, maxJTI)
	case c.HTM != method:
		return proof{}, fmt.Errorf(`the DPoP proof's "htm" is not this request's method %s`, method)
	}
	htu, err := url.Parse(c.HTU)
	if err != nil || *normalURL(htu) != *u {
		return proof{}, fmt.Errorf(`the DPoP proof's "htu" is not this request's URL %s`, u)
	}
	iat, err := strconv.ParseInt(string(c.IAT), 10, 64)
	if err != nil {
		return proof{}, errors.New(`the DPoP proof's "iat" is missing or not a whole number of seconds`)
	}
	issued := time.Unix(iat, 0)
	if issued.Before(now.Add(-d.opts.Window)) || issued.After(now.Add(d.opts.Window)) {
		return proof{}, fmt.Errorf(`the DPoP proof's "iat" is more than %s from the server's time: send a fresh proof (and check the clock)`, d.opts.Window)
	}
	ath := sha256.Sum256([]byte(token))
	if c.ATH != base64.RawURLEncoding.EncodeToString(ath[:]) {
		return proof{}, errors.New(`the DPoP proof's "ath" is not the hash of the access token`)
	}
	tp, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return proof{}, errors.New(`the DPoP proof's "jwk" has no thumbprint`)
	}
	jkt := base64.RawURLEncoding.EncodeToString(tp)
	id := sha256.Sum256([]byte(jkt + "\x00" + c.JTI))
	return proof{jkt: jkt, id: base64.RawURLEncoding.EncodeToString(id[:]), until: issued.Add(d.opts.Window)}, nil
}

// checkProofKey refuses weak keys: RSA keys under 2048 bits, and EC keys
// of curves other than P-256, P-384 and P-521 (go-jose knows no others).
func checkProofKey(k any) error {
	switch k := k.(type) {
	case *rsa.PublicKey:
		if k.N.BitLen() < 2048 {
			return fmt.Errorf("the DPoP proof's RSA key has %d bits, fewer than 2048", k.N.BitLen())
		}
	case *ecdsa.PublicKey, ed25519.PublicKey:
	default:
		return fmt.Errorf("the DPoP proof's key is a %T, not an RSA, EC or Ed25519 public key", k)
	}
	return nil
}

// challengeWriter adds a DPoP challenge to the 401 answers of the
// handler it is given to.
type challengeWriter struct {
	http.ResponseWriter
	challenge string
	wrote     bool
}

func (w *challengeWriter) WriteHeader(code int) {
	if !w.wrote {
		w.wrote = true
		if code == http.StatusUnauthorized {
			w.Header().Add("WWW-Authenticate", w.challenge)
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *challengeWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(p)
}

// Unwrap gives http.ResponseController the writer underneath (its
// deadlines, its flushing).
func (w *challengeWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// Flush flushes the writer underneath, for handlers that assert
// http.Flusher.
func (w *challengeWriter) Flush() {
	w.wrote = true
	http.NewResponseController(w.ResponseWriter).Flush()
}

// NewReplayCache returns a [ReplayCache] in this process's memory,
// holding at most max proofs at once (0 selects 100,000; each takes
// about a hundred bytes). When it is full of proofs still within their
// window, new proofs are refused (the request gets 503), never admitted
// unrecorded.
func NewReplayCache(max int) ReplayCache {
	if max <= 0 {
		max = defaultReplayMax
	}
	return &memoryReplay{max: max, m: map[string]time.Time{}}
}

// memoryReplay is [NewReplayCache]'s cache.
type memoryReplay struct {
	max int
	mu  sync.Mutex
	m   map[string]time.Time
}

func (c *memoryReplay) Use(_ context.Context, id string, until time.Time) (bool, error) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if u, ok := c.m[id]; ok && now.Before(u) {
		return false, nil
	}
	if len(c.m) >= c.max {
		for k, u := range c.m {
			if !now.Before(u) {
				delete(c.m, k)
			}
		}
		if len(c.m) >= c.max {
			return false, fmt.Errorf("%w: %d proofs within their window are held, the most this cache holds", ErrDPoPReplayStore, c.max)
		}
	}
	c.m[id] = until
	return true, nil
}
