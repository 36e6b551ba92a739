package service

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/lint"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/reload"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/tool"
)

// access is how the service decides who may do what.
type access struct {
	authorizer authz.Authorizer
	verifier   server.TokenVerifier
	// policy is the role policy, swapped by a reload; nil with a proxy.
	policy *reload.Authorizer
	// toolsets limits callers to their roles' toolsets (the policy's
	// "toolsets", of the request's generation); nil with a proxy, which
	// knows no toolsets.
	toolsets func(context.Context, authz.Caller) ([]string, bool)
	// tokens are the static tokens' verifier, swapped by a reload; nil
	// when callers are identified otherwise.
	tokens *tokenSet
	// files is what the policy and tokens files held at the last load.
	files *accessFiles
	// ready tells whether the authorizer can decide (the RBAC proxy is
	// reachable); nil when it cannot fail (a policy).
	ready func(context.Context) error
	oauth *oauthAccess // OAuth mode (-oidc-issuer), or nil
	// scopes is the scope policy (-scope-policy), or nil. Without
	// -step-up, authorizer requires its scopes; with it, upstream does.
	scopes *oauth.Scopes
	// upstream is the authorizer of the upstream requests, if it is not
	// authorizer: authorizer requiring scopes too (-step-up).
	upstream authz.Authorizer
}

// policyAt is a role policy with the digest of the file it was read
// from: what the reload authorizer holds, so that a request's toolsets
// and its result-cache scope come from the policy it is pinned to.
type policyAt struct {
	*authz.Policy
	sum string
}

// resultScope is the result cache's scope of a request (see
// resultcache.Options.Scope): the digest of the policy it decides under;
// "" with a proxy, whose policy the kit does not reload.
func (a *access) resultScope(ctx context.Context) string {
	if a.policy == nil {
		return ""
	}
	if p, ok := a.policy.At(ctx).(*policyAt); ok {
		return "policy " + p.sum
	}
	return "policy unknown"
}

// accessFiles is what the role policy and the static tokens hold (the
// -policy and -tokens files, or the command's embedded policy and demo
// tokens), checked together: a reload replaces both or neither.
type accessFiles struct {
	policy *authz.Policy     // nil with a proxy
	roles  []string          // the policy's roles, never empty; nil with a proxy
	tokens []tokenfile.Entry // the static tokens, if any
	demo   bool              // tokens are the embedded demo tokens
	// lint are the policy lint's findings (warnings at start and at a
	// reload, errors in check).
	lint []string
	sums fileSums // of the files as read
}

// fileSums are the SHA-256 digests (hex) of the -policy and -tokens
// files as read; "" for a file not given.
type fileSums struct {
	Policy string `json:"policySha256,omitempty"`
	Tokens string `json:"tokensSha256,omitempty"`
}

func digest(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// proxy decisions are cached this long: a revocation at the proxy takes
// effect within it.
const (
	proxyCacheTTL = 5 * time.Second
	proxyCacheMax = 10_000
)

// readAccessFiles reads and checks the role policy and the static tokens
// of cfg, for the tools of table: the policy compiles and grants
// something, the tokens' roles, -caller's and -anonymous's are roles of
// it.
func readAccessFiles(c Command, cfg Config, table registry.RouteTable) (*accessFiles, error) {
	f := &accessFiles{}
	if cfg.ProxyAuth == "" {
		data, err := policyData(cfg.PolicyFile, c.Policy)
		if err != nil {
			return nil, err
		}
		if cfg.PolicyFile != "" {
			f.sums.Policy = digest(data)
		}
		rps, p, err := parsePolicy(cfg.PolicyFile, data)
		if err != nil {
			return nil, err
		}
		if err := grantsSomething(rps); err != nil {
			return nil, fmt.Errorf("-policy %s: %w", policyName(cfg.PolicyFile), err)
		}
		for _, l := range lint.Policy(table, rps) {
			f.lint = append(f.lint, fmt.Sprintf("-policy %s: %s", policyName(cfg.PolicyFile), l.Message))
		}
		f.policy, f.roles = p, p.Roles()
	}
	switch {
	case cfg.TokensFile != "":
		data, err := readFile("tokens", cfg.TokensFile)
		if err != nil {
			return nil, err
		}
		f.sums.Tokens = digest(data)
		if f.tokens, err = tokenfile.Parse(data, f.roles); err != nil {
			return nil, fmt.Errorf("-tokens %s: %w", cfg.TokensFile, err)
		}
	case cfg.OAuth.Issuer == "" && cfg.ProxyAuth == "" && c.DemoTokens != nil:
		var err error
		if f.tokens, err = tokenfile.Parse(c.DemoTokens, f.roles); err != nil {
			if cfg.PolicyFile != "" {
				return nil, fmt.Errorf("the demo tokens need roles that -policy %s lacks: pass -tokens FILE with its roles (%w)", cfg.PolicyFile, err)
			}
			return nil, fmt.Errorf("the embedded demo tokens: %w", err)
		}
		f.demo = true
	}
	stdioRole := ""
	if cfg.Stdio {
		stdioRole = cfg.Caller
	}
	for _, r := range []struct{ flag, role string }{{"caller", stdioRole}, {"anonymous", cfg.Anonymous}} {
		if r.role != "" && f.roles != nil && !slices.Contains(f.roles, r.role) {
			return nil, fmt.Errorf("-%s %s: the policy has no role %q (it has %s)", r.flag, r.role, r.role, strings.Join(f.roles, ", "))
		}
	}
	return f, nil
}

// loadAccess builds the authorizer and the token verifier of cfg, for
// the tools of table.
//
// A dry run (check) builds no OAuth verifier, which would contact the
// authorization server: it reads the secret files only.
func loadAccess(c Command, cfg Config, table registry.RouteTable, obs *observability, dry bool) (*access, error) {
	if cfg.Stdio && cfg.Caller == "" {
		return nil, errors.New("-stdio needs -caller ROLE: the role of the local caller")
	}
	files, err := readAccessFiles(c, cfg, table)
	if err != nil {
		return nil, err
	}
	a := &access{files: files}
	if cfg.ProxyAuth != "" {
		proxy := &authz.ProxyAuth{BaseURL: cfg.ProxyAuth, Client: obs.proxyClient()}
		observed := obs.authorizer(proxy, telemetry.SourceProxy)
		a.authorizer = obs.authorizer(authz.Cached(observed, proxyCacheTTL, proxyCacheMax), telemetry.SourceCache)
		// The cache and the telemetry decorators ask the proxy's Ready.
		if rc, ok := a.authorizer.(authz.ReadyChecker); ok {
			a.ready = rc.Ready
		}
	} else {
		// A reload swaps the policy in (reload.go). No decision cache:
		// a policy decides in process, faster than a cache would.
		a.policy = reload.New(&policyAt{files.policy, files.sums.Policy})
		a.authorizer = obs.authorizer(a.policy, telemetry.SourcePolicy)
		a.toolsets = func(ctx context.Context, c authz.Caller) ([]string, bool) {
			// The toolsets of the policy the request decides under: the
			// one it was pinned to, as for its decisions.
			p, ok := a.policy.At(ctx).(*policyAt)
			if !ok {
				return nil, true // fail closed: no tool passes
			}
			return p.Toolsets(c)
		}
	}

	switch {
	case cfg.TokensFile != "", files.demo:
		a.tokens = newTokenSet(files.tokens)
		a.verifier = a.tokens.verify
	case cfg.OAuth.Issuer != "":
		if a.oauth, err = newOAuthAccess(cfg.OAuth, dry); err != nil {
			return nil, err
		}
		a.verifier = a.oauth.verify
	case cfg.ProxyAuth != "":
		// The proxy knows the tokens: it judges each one.
		probe, err := probeRoute(table)
		if err != nil {
			return nil, err
		}
		a.verifier = proxyToken(a.authorizer, subjectKey(cfg.stateKey), probe)
	case !cfg.Stdio:
		return nil, errors.New("no way to identify HTTP callers: give -tokens FILE, -oidc-issuer URL (with -audience) or -proxy-auth URL")
	default:
		// Over stdio the caller is -caller; no token is verified.
		a.tokens = newTokenSet(nil)
		a.verifier = a.tokens.verify
	}

	if f := cfg.OAuth.ScopePolicyFile; f != "" {
		data, err := readFile("scope-policy", f)
		if err != nil {
			return nil, err
		}
		if a.scopes, err = oauth.ParseScopePolicy(data); err != nil {
			return nil, fmt.Errorf("-scope-policy %s: %w", f, err)
		}
		// Every upstream request needs its route's scopes; unless step-up
		// challenges are wanted, the server's visibility does too, so
		// that a tool whose scopes the token lacks is hidden.
		if cfg.OAuth.StepUp {
			a.upstream = a.scopes.Authorizer(a.authorizer)
		} else {
			a.authorizer = a.scopes.Authorizer(a.authorizer)
		}
	}
	return a, nil
}

// tokenSet is the static tokens' verifier, swapped by a reload: a
// request is verified against the tokens of the last load.
type tokenSet struct {
	cur atomic.Pointer[server.TokenVerifier]
}

func newTokenSet(entries []tokenfile.Entry) *tokenSet {
	t := &tokenSet{}
	t.swap(entries)
	return t
}

// swap makes entries the tokens.
func (t *tokenSet) swap(entries []tokenfile.Entry) {
	v := server.StaticTokens(tokenfile.Callers(entries))
	t.cur.Store(&v)
}

func (t *tokenSet) verify(ctx context.Context, token string, r *http.Request) (authz.Caller, error) {
	return (*t.cur.Load())(ctx, token, r)
}

// upstreamAuthorizer is the authorizer of the upstream requests.
func (a *access) upstreamAuthorizer() authz.Authorizer {
	if a.upstream != nil {
		return a.upstream
	}
	return a.authorizer
}

// probeRoute is the route that proxyToken asks the proxy about: the
// first of the tools' routes.
func probeRoute(table registry.RouteTable) (tool.Route, error) {
	for _, e := range table.Tools {
		if len(e.Routes) > 0 {
			return e.Routes[0], nil
		}
	}
	return tool.Route{}, errors.New("-proxy-auth without -tokens asks the proxy about a route of the tools to identify a token, and no tool has a route: give -tokens FILE")
}

// grantsSomething refuses a parsed policy that defines no role or whose
// access policies allow nothing: every mapped tool would be hidden from
// every caller, and every role named elsewhere (tokens, -anonymous,
// -caller) would be one the policy does not define or that grants
// nothing, a mistake that would otherwise show only at the first call.
func grantsSomething(rps []authz.RolePolicy) error {
	if len(rps) == 0 {
		return errors.New("the policy defines no role: every tool but the local ones would be hidden from every caller; give at least one role policy ({\"role\", \"accessPolicies\"})")
	}
	for _, rp := range rps {
		for _, ap := range rp.AccessPolicies {
			if ap.Effect == authz.Allow {
				return nil
			}
		}
	}
	return fmt.Errorf("the policy allows nothing (no access policy of its roles %s has effect %q): every tool but the local ones would be hidden from every caller", quoteAll(rps), authz.Allow)
}

func quoteAll(rps []authz.RolePolicy) string {
	q := make([]string, len(rps))
	for i, rp := range rps {
		q[i] = fmt.Sprintf("%q", rp.Role)
	}
	return strings.Join(q, ", ")
}

// proxyToken is the verifier used with an RBAC proxy and no tokens file:
// the proxy judges every token, before any tool runs (local tools
// included, which never ask the authorizer). A token the proxy does not
// know gets HTTP 401 here too; a token it knows is a caller whose subject
// is a keyed digest of the token (128 bits of HMAC-SHA256 under key, see
// subjectKey: it tells callers apart in the logs, binds their sessions,
// and cannot be used to test guesses of a token offline), whatever the
// proxy then allows it.
//
// A token is known only on an answer that says so in the documented
// shape: the batch endpoint's JSON decision for the asked route (allowed
// or not), or its 403 (every route denied). Any other answer, such as an
// HTTP 200 whose body is not that JSON, is an outage: the request fails
// (HTTP 503), never gets in. The single-decision endpoint is not asked,
// as its answer is a bare status that a misbehaving proxy gives to any
// token. a is cached, so this costs one proxy round trip per token and
// cache period.
func proxyToken(a authz.Authorizer, key []byte, route tool.Route) server.TokenVerifier {
	probe := []tool.Route{route}
	return func(ctx context.Context, token string, _ *http.Request) (authz.Caller, error) {
		if token == "" {
			return authz.Caller{}, fmt.Errorf("empty bearer token: %w", server.ErrInvalidToken)
		}
		mac := hmac.New(sha256.New, key)
		mac.Write([]byte(token))
		c := authz.Caller{Subject: "token-" + hex.EncodeToString(mac.Sum(nil)[:16]), Bearer: token}
		var unauth *authz.UnauthenticatedError
		switch decided, err := a.AllowMany(ctx, c, probe); {
		case err == nil && len(decided) == len(probe):
			return c, nil
		case errors.As(err, &unauth):
			return authz.Caller{}, fmt.Errorf("the RBAC proxy does not know the token: %w", server.ErrInvalidToken)
		case err == nil:
			return authz.Caller{}, fmt.Errorf("checking the token with the RBAC proxy: %w", &authz.OutageError{Err: fmt.Errorf("%d decisions for %d routes", len(decided), len(probe))})
		default:
			// An outage's text says only that: the log needs its cause.
			var outage *authz.OutageError
			if errors.As(err, &outage) && outage.Err != nil {
				return authz.Caller{}, fmt.Errorf("checking the token with the RBAC proxy: %w: %v", err, outage.Err)
			}
			return authz.Caller{}, fmt.Errorf("checking the token with the RBAC proxy: %w", err)
		}
	}
}
