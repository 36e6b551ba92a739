package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/internal/core/jsonpos"
	"github.com/toolroute/toolroute/internal/core/rules"

	"github.com/toolroute/toolroute/tool"
)

// RolePolicy is one role's access policies, in the RBAC proxy's own JSON
// shape:
//
//	{"role": "viewer", "accessPolicies": [
//	  {"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}
//	]}
//
// Toolsets, toolroute's own addition to that shape, limits the role to
// the tools of those tags (see [Policy.Toolsets]); a role without them
// is not limited.
type RolePolicy struct {
	Role           string         `json:"role"`
	AccessPolicies []AccessPolicy `json:"accessPolicies"`
	Toolsets       []string       `json:"toolsets,omitempty"`
}

// AccessPolicy allows or denies the routes whose method is one of Methods
// and whose URI Path matches.
type AccessPolicy struct {
	// Path is a regular expression (Go RE2 syntax) matched against a
	// route's URI, service prefix included. As in the proxy, it matches
	// anywhere in the URI unless anchored: write "^...$".
	Path string `json:"path"`
	// Methods are upper-case HTTP methods; at least one.
	Methods []string `json:"methods"`
	// Effect is [Allow] or [Deny] ("allow" or "deny" in JSON).
	Effect Effect `json:"effect"`
}

// Effect is what a rule decides: [Allow] or [Deny]. A role policy's
// [AccessPolicy] and authz/permission's rules share it; its JSON form is
// the word itself.
type Effect string

// The effects.
const (
	Allow Effect = "allow"
	Deny  Effect = "deny"
)

// Policy is an in-process [Authorizer] over role policies, for deployments
// without an RBAC proxy and as an embedded default.
//
// A route is allowed for a role if an access policy of the role allows it
// (its method is listed and its path regexp matches the route's URI) and
// none denies it: deny overrides allow, and no matching policy means deny.
// A caller is allowed a route if any of its roles is ("union"). A caller
// with neither Subject nor Roles is unauthenticated. Roles the policy does
// not know allow nothing. The bearer plays no part.
//
// Regexps are compiled once, by [NewPolicy] or [ParsePolicy], and indexed
// by method. Those that are route templates in disguise (literal segments
// and "[^/]+" segments, optional or alternative parts, anchored at both
// ends: what [RolePolicyFor] writes and most hand-written policies hold)
// are decided segment by segment in a trie, without running a regexp;
// the others are indexed by literal prefix, so that a decision runs only
// the regexps that can match. A Policy is immutable and safe for
// concurrent use.
type Policy struct {
	roles map[string]*rolePolicy
}

type rolePolicy struct {
	byMethod [len(httpMethods)]*matcher
	toolsets []string // sorted, distinct; nil: not limited
}

// httpMethods are the methods an access policy may name (those of
// [tool.Route]).
var httpMethods = [...]string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

func methodIndex(m string) int {
	switch m {
	case "GET":
		return 0
	case "HEAD":
		return 1
	case "POST":
		return 2
	case "PUT":
		return 3
	case "PATCH":
		return 4
	case "DELETE":
		return 5
	case "OPTIONS":
		return 6
	case "CONNECT":
		return 7
	case "TRACE":
		return 8
	}
	return -1
}

// rule is one compiled access policy.
type rule struct {
	re       *regexp.Regexp
	deny     bool
	lit      string // literal every match begins with
	anchored bool   // matches only at the start of the URI
}

// matches reports whether r's regexp matches uri. For an anchored rule
// the caller has checked the literal prefix already (the prefix index).
func (r *rule) matches(uri string) bool {
	if !r.anchored && r.lit != "" && !strings.Contains(uri, r.lit) {
		return false
	}
	return r.re.MatchString(uri)
}

// matcher holds a role's rules for one method: templates in disguise in
// a trie of parts, the other regexps indexed by literal prefix.
type matcher struct {
	seg   *segNode // nil: no template rules
	rules []rule   // the other rules
	root  prefixNode
	deny  bool // some rule denies
}

// prefixNode is a node of a radix tree over the rules' literal prefixes.
// A rule sits at the node its prefix ends at (the root for unanchored
// rules); a URI's candidate rules are those on the path from the root
// along the URI.
type prefixNode struct {
	label    string
	rules    []int32
	children []*prefixNode // first bytes of labels are distinct
}

func (n *prefixNode) insert(key string, r int32) {
	for key != "" {
		var c *prefixNode
		for _, ch := range n.children {
			if ch.label[0] == key[0] {
				c = ch
				break
			}
		}
		if c == nil {
			n.children = append(n.children, &prefixNode{label: key, rules: []int32{r}})
			return
		}
		l := 0
		for l < len(c.label) && l < len(key) && c.label[l] == key[l] {
			l++
		}
		if l < len(c.label) {
			*c = prefixNode{label: c.label[:l], children: []*prefixNode{{label: c.label[l:], rules: c.rules, children: c.children}}}
		}
		n, key = c, key[l:]
	}
	n.rules = append(n.rules, r)
}

// decide reports whether the rules allow uri: some rule allows and none
// denies.
func (m *matcher) decide(uri string) bool {
	allowed := false
	if m.seg != nil {
		a, d := m.seg.match(uri, false)
		if d {
			return false
		}
		if a && !m.deny {
			return true
		}
		allowed = a
	}
	n := &m.root
	rest := uri
	for {
		for _, i := range n.rules {
			r := &m.rules[i]
			if allowed && !r.deny {
				continue // only a denial can change the answer now
			}
			if r.matches(uri) {
				if r.deny {
					return false
				}
				allowed = true
				if !m.deny {
					return true
				}
			}
		}
		if rest == "" {
			return allowed
		}
		var next *prefixNode
		for _, ch := range n.children {
			if ch.label[0] == rest[0] {
				next = ch
				break
			}
		}
		if next == nil || !strings.HasPrefix(rest, next.label) {
			return allowed
		}
		n, rest = next, rest[len(next.label):]
	}
}

// ParsePolicy parses a JSON array of role policies (see [RolePolicy]) and
// compiles it with [NewPolicy]. Unknown fields and trailing data are
// errors.
func ParsePolicy(data []byte) (*Policy, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var roles []RolePolicy
	if err := dec.Decode(&roles); err != nil {
		return nil, fmt.Errorf("authz: policy: invalid JSON: %w", jsonpos.Err(data, err))
	}
	if dec.More() {
		return nil, fmt.Errorf("authz: policy: invalid JSON: data after the array at offset %d", dec.InputOffset())
	}
	if roles == nil {
		return nil, errors.New("authz: policy: invalid JSON: want an array of role policies, got null")
	}
	return NewPolicy(roles)
}

// MustParsePolicy is like [ParsePolicy] but panics on error; it is meant
// for policies embedded in the binary.
func MustParsePolicy(data []byte) *Policy {
	p, err := ParsePolicy(data)
	if err != nil {
		panic(err.Error())
	}
	return p
}

// NewPolicy compiles role policies. It returns every problem, joined, each
// naming the role and policy: an empty or duplicate role name, an empty
// or invalid path regexp, no methods, an unknown or duplicate method, an
// effect other than "allow" and "deny".
func NewPolicy(roles []RolePolicy) (*Policy, error) {
	p := &Policy{roles: make(map[string]*rolePolicy, len(roles))}
	paths := map[string]compiledPath{} // roles often share paths
	var errs []error
	for i, rp := range roles {
		where := fmt.Sprintf("authz: policy: role %q (entry %d)", rp.Role, i)
		if rp.Role == "" {
			errs = append(errs, fmt.Errorf("%s: empty role name", where))
			continue
		}
		if _, dup := p.roles[rp.Role]; dup {
			errs = append(errs, fmt.Errorf("%s: duplicate role", where))
			continue
		}
		role := &rolePolicy{}
		p.roles[rp.Role] = role
		if rp.Toolsets != nil {
			if len(rp.Toolsets) == 0 {
				errs = append(errs, fmt.Errorf("%s: toolsets is empty: name at least one tag, or leave toolsets out for a role that is not limited", where))
			}
			for _, tag := range rp.Toolsets {
				if !rules.ValidTag(tag) {
					errs = append(errs, fmt.Errorf("%s: toolsets: %q is not a tag (1 to 64 of a-z 0-9 _ . -, starting with a letter or digit)", where, tag))
				}
			}
			role.toolsets = slices.Compact(slices.Sorted(slices.Values(rp.Toolsets)))
		}
		for j, ap := range rp.AccessPolicies {
			r, idx, tmpls, err := compileRule(ap, paths)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s: accessPolicies[%d]: %w", where, j, err))
				continue
			}
			isTemplate := tmpls != nil
			for _, k := range idx {
				m := role.byMethod[k]
				if m == nil {
					m = &matcher{}
					role.byMethod[k] = m
				}
				m.deny = m.deny || r.deny
				if isTemplate {
					if m.seg == nil {
						m.seg = &segNode{}
					}
					for _, t := range tmpls {
						m.seg.insert(t, r.deny)
					}
					continue
				}
				key := ""
				if r.anchored {
					key = r.lit
				}
				m.root.insert(key, int32(len(m.rules)))
				m.rules = append(m.rules, r)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return p, nil
}

// compileRule compiles ap and returns it with the indexes of its methods.
// A path that is a route template in disguise (see templates) is returned
// as its templates instead, for the segment trie, and is not compiled: a
// policy of many routes compiles no regexp for most of them.
func compileRule(ap AccessPolicy, paths map[string]compiledPath) (rule, []int, [][]segPart, error) {
	var r rule
	switch ap.Effect {
	case Allow:
	case Deny:
		r.deny = true
	default:
		return r, nil, nil, fmt.Errorf("effect %q: want %q or %q", ap.Effect, Allow, Deny)
	}
	if len(ap.Methods) == 0 {
		return r, nil, nil, errors.New("no methods: list the HTTP methods the policy applies to")
	}
	var idx []int
	for _, m := range ap.Methods {
		k := methodIndex(m)
		if k < 0 {
			return r, nil, nil, fmt.Errorf("method %q is not an upper-case HTTP method", m)
		}
		if slices.Contains(idx, k) {
			return r, nil, nil, fmt.Errorf("method %q listed twice", m)
		}
		idx = append(idx, k)
	}
	if ap.Path == "" {
		return r, nil, nil, errors.New("empty path: write a regexp such as \"^/service/api/items$\"")
	}
	c, ok := paths[ap.Path]
	if !ok {
		var err error
		if c, err = compilePath(ap.Path); err != nil {
			return r, nil, nil, err
		}
		paths[ap.Path] = c
	}
	r.re, r.lit, r.anchored = c.re, c.lit, c.anchored
	return r, idx, c.tmpls, nil
}

// compiledPath is an access policy's path, compiled: the templates it is
// equivalent to, or else its regexp.
type compiledPath struct {
	tmpls    [][]segPart
	re       *regexp.Regexp
	lit      string
	anchored bool
}

func compilePath(path string) (compiledPath, error) {
	sre, err := syntax.Parse(path, syntax.Perl)
	if err != nil {
		return compiledPath{}, fmt.Errorf("path %q: %w", path, err)
	}
	sre = sre.Simplify()
	if tmpls, ok := templatesOf(sre); ok {
		return compiledPath{tmpls: tmpls}, nil
	}
	re, err := regexp.Compile(path)
	if err != nil {
		return compiledPath{}, fmt.Errorf("path %q: %w", path, err)
	}
	lit, _ := re.LiteralPrefix()
	return compiledPath{re: re, lit: lit, anchored: anchoredAtStart(sre)}, nil
}

// anchoredAtStart reports whether every match of re begins at the start
// of the text.
func anchoredAtStart(re *syntax.Regexp) bool {
	switch re.Op {
	case syntax.OpBeginText:
		return true
	case syntax.OpConcat:
		return len(re.Sub) > 0 && anchoredAtStart(re.Sub[0])
	case syntax.OpCapture:
		return anchoredAtStart(re.Sub[0])
	case syntax.OpAlternate:
		for _, s := range re.Sub {
			if !anchoredAtStart(s) {
				return false
			}
		}
		return len(re.Sub) > 0
	}
	return false
}

// Roles returns the names of the roles p defines, sorted. A caller's
// role that is not among them allows nothing: a service should refuse to
// start with such a role in its configuration.
func (p *Policy) Roles() []string {
	return slices.Sorted(maps.Keys(p.roles))
}

// Allow reports whether c may reach r: nil, a *[DeniedError], or an
// *[UnauthenticatedError] for a caller with neither subject nor roles.
func (p *Policy) Allow(_ context.Context, c Caller, r tool.Route) error {
	if c.Subject == "" && len(c.Roles) == 0 {
		return &UnauthenticatedError{Reason: "caller has neither subject nor roles"}
	}
	if p.allows(c.Roles, r) {
		return nil
	}
	return &DeniedError{Route: r, Subject: c.Subject, Reason: "no role of the caller allows the route"}
}

// AllowMany decides every route of rs like Allow.
func (p *Policy) AllowMany(_ context.Context, c Caller, rs []tool.Route) ([]bool, error) {
	if c.Subject == "" && len(c.Roles) == 0 {
		return nil, &UnauthenticatedError{Reason: "caller has neither subject nor roles"}
	}
	out := make([]bool, len(rs))
	for i, r := range rs {
		out[i] = p.allows(c.Roles, r)
	}
	return out, nil
}

func (p *Policy) allows(roles []string, r tool.Route) bool {
	k := methodIndex(r.Method)
	if k < 0 {
		return false
	}
	for _, name := range roles {
		role := p.roles[name]
		if role == nil {
			continue
		}
		if m := role.byMethod[k]; m != nil && m.decide(r.URI) {
			return true
		}
	}
	return false
}

// RolePolicyFor returns a role policy that allows exactly routes: one
// anchored path regexp per distinct URI ("{name}" placeholders become
// "[^/]+", one segment; the rest is quoted literally), with the methods of
// the routes on that URI. Policies are sorted by path and methods
// alphabetically, so the output is stable for review.
//
// An operator uses it to produce, say, a "viewer" role that grants exactly
// the routes of the read-only tools. routes are assumed valid (as a
// registry's are).
func RolePolicyFor(role string, routes []tool.Route) RolePolicy {
	byURI := map[string][]string{}
	for _, r := range routes {
		if !slices.Contains(byURI[r.URI], r.Method) {
			byURI[r.URI] = append(byURI[r.URI], r.Method)
		}
	}
	out := RolePolicy{Role: role, AccessPolicies: make([]AccessPolicy, 0, len(byURI))}
	for uri, ms := range byURI {
		slices.Sort(ms)
		out.AccessPolicies = append(out.AccessPolicies, AccessPolicy{Path: pathRegexp(uri), Methods: ms, Effect: Allow})
	}
	slices.SortFunc(out.AccessPolicies, func(a, b AccessPolicy) int { return strings.Compare(a.Path, b.Path) })
	return out
}

// pathRegexp returns the anchored regexp of a route template's URI.
func pathRegexp(uri string) string {
	var b strings.Builder
	b.WriteByte('^')
	for i, seg := range strings.Split(uri, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if len(seg) >= 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
			b.WriteString("[^/]+")
		} else {
			b.WriteString(regexp.QuoteMeta(seg))
		}
	}
	b.WriteByte('$')
	return b.String()
}
