package oauth

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// ScopeRule says that the routes whose method is one of Methods and
// whose URI matches Path need Scope: a token must have been granted it
// (or a scope implying it) to reach them.
type ScopeRule struct {
	// Scope is the OAuth scope the routes need ("catalog:write"): 1 or
	// more printable ASCII characters but space, '"' and '\' (RFC 6749
	// §3.3).
	Scope string `json:"scope"`
	// Path is a regular expression matched against a route's URI,
	// service prefix included, as [authz.AccessPolicy]'s Path: anchor it
	// ("^...$") to match the whole URI.
	Path string `json:"path"`
	// Methods are upper-case HTTP methods; at least one.
	Methods []string `json:"methods"`
}

// ScopePolicy says which scopes the routes need, and which scopes imply
// others. Its JSON form:
//
//	{"rules": [
//	  {"scope": "catalog:read",  "path": "^/catalog/", "methods": ["GET"]},
//	  {"scope": "catalog:write", "path": "^/catalog/", "methods": ["POST", "PUT", "DELETE"]}
//	 ],
//	 "implies": {"catalog:admin": ["catalog:write", "catalog:read"]}}
//
// A route matched by several rules needs each of their scopes. A tool
// needs every scope its routes need, since a call may reach any of them.
type ScopePolicy struct {
	Rules []ScopeRule `json:"rules"`
	// Implies maps a broader scope to the narrower ones it implies (MCP
	// 2026-07-28: a server accounts for scope hierarchies). Implication
	// is transitive; a broader scope need not appear in any rule.
	Implies map[string][]string `json:"implies,omitempty"`
}

// Scopes is a compiled [ScopePolicy]: which scopes a route needs, and
// whether a caller's scopes ([authz.Caller].Scopes) hold them. It must be
// created with [NewScopes] or [ParseScopePolicy], is immutable and safe
// for concurrent use.
//
// It enforces scopes in one of two ways, and the choice is the
// operator's, because a scope challenge tells that a tool exists:
//
//   - hidden (the default): [Scopes.Authorizer] in front of the server's
//     authorizer makes a route whose scopes the caller lacks refused like
//     any other, so that a tool needing a scope the token lacks is not
//     listed, and a call of it answers like an unknown tool's;
//   - step-up (opt-in): tools are listed by roles alone, and
//     [Scopes.StepUp] answers a call of a tool the caller sees but whose
//     scopes its token lacks with HTTP 403 and a challenge naming every
//     scope the tool needs, so that the client asks for a token with
//     them; [Scopes.Authorizer] still guards every upstream request
//     (authz.Transport).
type Scopes struct {
	needs   *authz.Policy       // each scope a role allowing the routes that need it
	all     []string            // every scope named, sorted
	implies map[string][]string // each scope's implied scopes, transitively
}

// ParseScopePolicy parses a scope policy's JSON (see [ScopePolicy]) and
// compiles it with [NewScopes]. Unknown fields and trailing data are
// errors.
func ParseScopePolicy(data []byte) (*Scopes, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p ScopePolicy
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("oauth: scope policy: invalid JSON: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("oauth: scope policy: invalid JSON: data after the object at offset %d", dec.InputOffset())
	}
	return NewScopes(p)
}

// NewScopes compiles p. It fails, naming the rule, on a rule without a
// valid scope, path or method, and on an implication naming an invalid
// scope.
func NewScopes(p ScopePolicy) (*Scopes, error) {
	if len(p.Rules) == 0 {
		return nil, errors.New("oauth: scope policy: no rules: no route would need a scope; give at least one {\"scope\", \"path\", \"methods\"}")
	}
	byScope := map[string][]authz.AccessPolicy{}
	for i, r := range p.Rules {
		if err := checkScope(r.Scope); err != nil {
			return nil, fmt.Errorf("oauth: scope policy: rules[%d]: scope %q %v", i, r.Scope, err)
		}
		byScope[r.Scope] = append(byScope[r.Scope], authz.AccessPolicy{Path: r.Path, Methods: r.Methods, Effect: authz.Allow})
	}
	roles := make([]authz.RolePolicy, 0, len(byScope))
	for _, sc := range slices.Sorted(maps.Keys(byScope)) {
		roles = append(roles, authz.RolePolicy{Role: sc, AccessPolicies: byScope[sc]})
	}
	needs, err := authz.NewPolicy(roles)
	if err != nil {
		// Its text names the role (the scope) and the access policy.
		return nil, fmt.Errorf("oauth: scope policy: %s", strings.TrimPrefix(err.Error(), "authz: "))
	}
	s := &Scopes{needs: needs, implies: map[string][]string{}}
	named := map[string]bool{}
	for sc := range byScope {
		named[sc] = true
	}
	for broad, narrow := range p.Implies {
		for _, sc := range append([]string{broad}, narrow...) {
			if err := checkScope(sc); err != nil {
				return nil, fmt.Errorf("oauth: scope policy: implies[%q]: scope %q %v", broad, sc, err)
			}
			named[sc] = true
		}
	}
	for sc := range named {
		s.implies[sc] = closure(sc, p.Implies)
	}
	s.all = slices.Sorted(maps.Keys(named))
	return s, nil
}

// closure is every scope sc implies, through any chain of implications.
func closure(sc string, implies map[string][]string) []string {
	seen := map[string]bool{sc: true}
	todo := []string{sc}
	for len(todo) > 0 {
		cur := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for _, n := range implies[cur] {
			if !seen[n] {
				seen[n] = true
				todo = append(todo, n)
			}
		}
	}
	delete(seen, sc)
	return slices.Sorted(maps.Keys(seen))
}

// checkScope refuses a value that is not a scope token (RFC 6749 §3.3).
func checkScope(sc string) error {
	if sc == "" {
		return errors.New("is empty")
	}
	for _, c := range sc {
		if c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return fmt.Errorf("holds %q: a scope is printable ASCII without space, '\"' or '\\'", c)
		}
	}
	return nil
}

// Supported returns every scope the policy names, sorted: the protected
// resource metadata's scopes_supported (RFC 9728).
func (s *Scopes) Supported() []string { return slices.Clone(s.all) }

// Needed returns the scopes that routes need, sorted and distinct: all
// of them, for an operation that may reach any of the routes.
func (s *Scopes) Needed(routes ...tool.Route) []string {
	var need []string
	ctx := context.Background()
	for _, sc := range s.all {
		who := authz.Caller{Roles: []string{sc}}
		for _, r := range routes {
			if s.needs.Allow(ctx, who, r) == nil {
				need = append(need, sc)
				break
			}
		}
	}
	return need
}

// Covers reports whether the scopes held, with those they imply, include
// every scope of need.
func (s *Scopes) Covers(held, need []string) bool {
	for _, n := range need {
		if !s.holds(held, n) {
			return false
		}
	}
	return true
}

func (s *Scopes) holds(held []string, sc string) bool {
	for _, h := range held {
		if h == sc || slices.Contains(s.implies[h], sc) {
			return true
		}
	}
	return false
}

// Authorizer returns inner requiring scopes too: a route is allowed if
// inner allows it and the caller's scopes cover those the route needs;
// else it is refused with an *[authz.DeniedError] (whose reason, logged,
// names the scopes). Put it in front of the authorizer of the server (for
// hidden tools) and of authz.Transport (always). If inner is an
// [authz.ReadyChecker], so is the result.
func (s *Scopes) Authorizer(inner authz.Authorizer) authz.Authorizer {
	if inner == nil {
		panic("oauth: Scopes.Authorizer: nil inner authorizer")
	}
	return &scoped{s: s, inner: inner}
}

// scoped is [Scopes.Authorizer]'s authorizer.
type scoped struct {
	s     *Scopes
	inner authz.Authorizer
}

func (a *scoped) Allow(ctx context.Context, c authz.Caller, r tool.Route) error {
	if err := a.inner.Allow(ctx, c, r); err != nil {
		return err
	}
	if need := a.s.Needed(r); !a.s.Covers(c.Scopes, need) {
		return &authz.DeniedError{Route: r, Subject: c.Subject, Reason: "insufficient_scope: the route needs the scopes " + strings.Join(need, " ")}
	}
	return nil
}

func (a *scoped) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	allowed, err := a.inner.AllowMany(ctx, c, rs)
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		if i < len(allowed) && allowed[i] && !a.s.Covers(c.Scopes, a.s.Needed(r)) {
			allowed[i] = false
		}
	}
	return allowed, nil
}

// Ready asks inner, if it is an [authz.ReadyChecker].
func (a *scoped) Ready(ctx context.Context) error {
	if rc, ok := a.inner.(authz.ReadyChecker); ok {
		return rc.Ready(ctx)
	}
	return nil
}

// maxStepUpPeek is how much of a request's body StepUp reads to find the
// tool a request without an Mcp-Name header calls; a larger body is not
// challenged (its upstream requests are still refused by the Authorizer).
const maxStepUpPeek = 64 << 10

// StepUp returns a server.HTTPOptions.StepUp for the tools the server
// serves (registry.Registry.Calls; a local tool needs no scope, and a
// tool absent from tools is not challenged): for a tools/call of a
// tool that the caller may see by inner (the server's authorizer, by
// roles), whose scopes its token does not cover, it returns every scope
// the tool needs, which the server names in its 403 challenge. It
// returns nil for everything else: another method, an unknown or local
// tool, a tool inner hides (it must answer like an unknown one, and no
// challenge may name its scopes), or an authorizer that cannot decide
// (the call then fails closed as usual).
//
// The tool is the Mcp-Name header's (MCP 2026-07-28: the SDK refuses a
// request whose body names another), else the one a single JSON-RPC
// request of at most 64 KiB calls, read from the body and put back.
func (s *Scopes) StepUp(inner authz.Authorizer, tools []*tool.Call) func(r *http.Request, c authz.Caller) []string {
	if inner == nil {
		panic("oauth: Scopes.StepUp: nil authorizer")
	}
	type toolNeeds struct {
		routes []tool.Route
		need   []string
	}
	byName := map[string]toolNeeds{}
	for _, t := range tools {
		if t == nil {
			panic("oauth: Scopes.StepUp: nil tool")
		}
		if need := s.Needed(t.Routes...); len(need) > 0 && !t.Local {
			byName[t.Tool] = toolNeeds{slices.Clone(t.Routes), need}
		}
	}
	return func(r *http.Request, c authz.Caller) []string {
		name, ok := calledTool(r)
		if !ok {
			return nil
		}
		t, ok := byName[name]
		if !ok || s.Covers(c.Scopes, t.need) {
			return nil
		}
		allowed, err := inner.AllowMany(r.Context(), c, t.routes)
		if err != nil || !slices.Contains(allowed, true) {
			return nil
		}
		return slices.Clone(t.need)
	}
}

// calledTool returns the tool a request calls, if it is a tools/call.
func calledTool(r *http.Request) (string, bool) {
	if m := r.Header.Get("Mcp-Method"); m != "" {
		name := r.Header.Get("Mcp-Name")
		return name, m == "tools/call" && name != ""
	}
	if r.Method != http.MethodPost || r.Body == nil || r.Body == http.NoBody {
		return "", false
	}
	head, err := io.ReadAll(io.LimitReader(r.Body, maxStepUpPeek+1))
	r.Body = &replayBody{Reader: io.MultiReader(bytes.NewReader(head), r.Body), Closer: r.Body}
	if err != nil || len(head) > maxStepUpPeek {
		return "", false
	}
	var msg struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	if json.Unmarshal(head, &msg) != nil || msg.Method != "tools/call" || msg.Params.Name == "" {
		return "", false
	}
	return msg.Params.Name, true
}

// replayBody is a body of which a part was read ahead and is read again.
type replayBody struct {
	io.Reader
	io.Closer
}
