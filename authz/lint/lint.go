package lint

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// Kind is what a [Finding] is about; see the package documentation for
// each check.
type Kind int

// The kinds of findings.
const (
	// Invalid is a role or rule authz refuses for a reason other than a
	// method: an empty or duplicate role name, an effect other than
	// "allow" and "deny", an empty or invalid path regexp, no methods, a
	// method listed twice.
	Invalid Kind = iota + 1
	// UnknownMethod is a method authz does not accept ("get" for "GET").
	UnknownMethod
	// NoTools is a role whose rules reach no route of any tool: a caller
	// with only this role sees the local tools alone.
	NoTools
	// ValuesOnly is an allow rule that matches concrete request paths of
	// a route but none of the route templates: it lets requests through
	// and shows no tool.
	ValuesOnly
	// TemplateOnly is an allow rule that matches a route template as
	// written but none of its concrete request paths, when no other allow
	// rule of the role matches one: the tool is shown, every call of it is
	// refused.
	TemplateOnly
	// DeadDeny is a deny rule that denies nothing: no allow rule of its
	// role matches a path it matches, for a method they share.
	DeadDeny
	// UnknownToolset is a tag of a role's toolsets that no tool carries:
	// it shows nothing (a misspelt tag hides every tool it meant).
	UnknownToolset
)

var kindNames = [...]string{
	Invalid:        "invalid",
	UnknownMethod:  "unknown-method",
	NoTools:        "no-tools",
	ValuesOnly:     "values-only",
	TemplateOnly:   "template-only",
	DeadDeny:       "dead-deny",
	UnknownToolset: "unknown-toolset",
}

// String returns the kind's name: "invalid", "unknown-method",
// "no-tools", "values-only", "template-only", "dead-deny" or
// "unknown-toolset".
func (k Kind) String() string {
	if k > 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// Finding is one problem of a role policy.
type Finding struct {
	// Kind is what the finding is about.
	Kind Kind
	// Role is the role's name, as the policy writes it.
	Role string
	// Rule is the index of the rule in the role's AccessPolicies, or -1
	// for a finding about the role itself.
	Rule int
	// Message names the role, the rule (its index, effect, methods and
	// path), what is wrong and the fix.
	Message string
}

// String returns "lint: KIND: MESSAGE".
func (f Finding) String() string { return "lint: " + f.Kind.String() + ": " + f.Message }

// Error returns f.String(), so that a service's check command can return
// findings as errors (errors.Join of them, say).
func (f Finding) Error() string { return f.String() }

// methods are the methods authz accepts, in its order (authz/policy.go's
// httpMethods; a test holds the two together).
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// maxListed bounds the routes a message lists.
const maxListed = 5

// Policy lints the role policies roles (as JSON-decoded: the checks
// report every problem of a policy that [authz.ParsePolicy] refuses too)
// against the route table of the tools that will be authorized by them.
// It returns the findings in the order of roles, each role's own
// findings before its rules'; none if the policy is fine. The checks are
// described in the package documentation.
func Policy(table registry.RouteTable, roles []authz.RolePolicy) []Finding {
	l := &linter{
		routes: routesOf(table),
		langs:  map[string]*lang{},
		inter:  map[[2]*lang]witness{},
		budget: maxTotalStates,
	}
	for _, rt := range l.routes {
		l.templates = append(l.templates, rt.Route)
	}
	if keys := serviceKeys(l.routes); len(keys) > 0 {
		l.services, _ = compileLang(`^/(?:` + strings.Join(keys, "|") + `)(?:/|$)`)
	}
	var out []Finding
	first := map[string]int{}
	tags := map[string]bool{}
	for _, e := range table.Tools {
		for _, tag := range e.Tags {
			tags[tag] = true
		}
	}
	for i, rp := range roles {
		out = append(out, l.role(i, rp, first)...)
		for _, tag := range rp.Toolsets {
			if !tags[tag] {
				out = append(out, Finding{Kind: UnknownToolset, Role: rp.Role, Rule: -1, Message: fmt.Sprintf(
					"role %q: toolsets: no tool carries the tag %q, so it shows no tool; the tools' tags are %s", rp.Role, tag, tagList(tags))})
			}
		}
	}
	return out
}

// tagList names the tags, sorted and bounded, or says there are none.
func tagList(tags map[string]bool) string {
	if len(tags) == 0 {
		return "none (tool.Tool.Tags)"
	}
	list := slices.Sorted(maps.Keys(tags))
	if n := len(list) - maxListed; n > 0 {
		list = append(list[:maxListed], fmt.Sprintf("and %d more", n))
	}
	return strings.Join(list, ", ")
}

// route is a distinct route of the table, with the tools that declare it.
type route struct {
	tool.Route
	idx   int      // in linter.routes
	tools []string // sorted
	// concrete is the language of its concrete paths; nil (never, for a
	// valid template) answers unknown.
	concrete *lang
}

// routesOf returns the distinct routes of the table's mapped tools,
// sorted by URI and then method.
func routesOf(table registry.RouteTable) []*route {
	byRoute := map[tool.Route]*route{}
	var out []*route
	for _, e := range table.Tools {
		if e.Local {
			continue
		}
		for _, r := range e.Routes {
			rt := byRoute[r]
			if rt == nil {
				rt = &route{Route: r}
				rt.concrete, _ = compileLang(templateRegexp(r.URI))
				byRoute[r] = rt
				out = append(out, rt)
			}
			if !slices.Contains(rt.tools, e.Name) {
				rt.tools = append(rt.tools, e.Name)
			}
		}
	}
	slices.SortFunc(out, func(a, b *route) int {
		return cmp.Or(strings.Compare(a.URI, b.URI), cmp.Compare(slices.Index(methods, a.Method), slices.Index(methods, b.Method)))
	})
	for i, r := range out {
		r.idx = i
		slices.Sort(r.tools)
	}
	return out
}

// serviceKeys returns the first segments of the routes' URIs (their
// services' keys), quoted for a regexp.
func serviceKeys(routes []*route) []string {
	var keys []string
	for _, r := range routes {
		k, _, _ := strings.Cut(strings.TrimPrefix(r.URI, "/"), "/")
		if k = regexp.QuoteMeta(k); !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	return keys
}

// describe returns "METHOD URI (tool a)" or "(tools a, b)".
func (r *route) describe() string {
	s := "tool "
	if len(r.tools) > 1 {
		s = "tools "
	}
	return r.Route.String() + " (" + s + strings.Join(r.tools, ", ") + ")"
}

// witness is what shortest found for two regexps.
type witness struct {
	text string
	res  result
}

// linter holds what the checks of one Policy call share.
type linter struct {
	routes    []*route
	templates []tool.Route // the routes' Routes, for AllowMany
	services  *lang        // the paths of the table's services; nil: no routes
	langs     map[string]*lang
	inter     map[[2]*lang]witness
	budget    int // of states, for all the searches (maxTotalStates)
}

// lang returns the compiled language of a regexp that compiles.
func (l *linter) lang(pattern string) *lang {
	if g, ok := l.langs[pattern]; ok {
		return g
	}
	g, _ := compileLang(pattern)
	l.langs[pattern] = g
	return g
}

// both returns the shortest path both languages have; unknown for a
// nil one.
func (l *linter) both(a, b *lang) witness {
	switch {
	case a == nil || b == nil:
		return witness{res: unknown}
	case disjoint(a, b):
		return witness{res: empty}
	}
	if w, ok := l.inter[[2]*lang{a, b}]; ok {
		return w
	}
	if w, ok := l.inter[[2]*lang{b, a}]; ok {
		return w
	}
	var w witness
	w.text, w.res = shortest(a, b, &l.budget)
	l.inter[[2]*lang{a, b}] = w
	return w
}

// rule is one access policy, as the checks use it.
type rule struct {
	index   int
	ap      authz.AccessPolicy
	deny    bool
	methods []string // known, upper-case, distinct
	// usable: the effect is known and the path compiles, so the checks
	// can weigh the rule.
	usable bool
	lang   *lang         // of its path, if usable
	alone  *authz.Policy // the rule alone, as an allow rule; nil if not usable or no methods
	tmpl   []bool        // by route: the rule matches its template (see matchesTemplate)
}

// where names the rule in messages.
func (r *rule) where(role string) string {
	effect := string(r.ap.Effect)
	if effect == "" {
		effect = "no effect"
	}
	ms := strings.Join(r.ap.Methods, ",")
	if ms == "" {
		ms = "no methods"
	}
	return fmt.Sprintf("role %q, accessPolicies[%d] (%s %s %q)", role, r.index, effect, ms, r.ap.Path)
}

// has reports whether the rule applies to method.
func (r *rule) has(method string) bool { return slices.Contains(r.methods, method) }

// matchesTemplate reports whether the rule, as authz decides, matches
// rt's template as written, for rt's method (what visibility asks).
func (l *linter) matchesTemplate(r *rule, rt *route) bool {
	if r.alone == nil {
		return false
	}
	if r.tmpl == nil {
		var err error
		if r.tmpl, err = r.alone.AllowMany(context.Background(), lintCaller, l.templates); err != nil {
			r.tmpl = make([]bool, len(l.routes)) // unreachable: lintCaller has a role
		}
	}
	return r.tmpl[rt.idx]
}

// lintCaller holds the one role of the policies the checks build.
var lintCaller = authz.Caller{Roles: []string{"lint"}}

// allows reports whether p lets the role "lint" reach rt.
func allows(p *authz.Policy, rt tool.Route) bool {
	return p.Allow(context.Background(), lintCaller, rt) == nil
}

// role lints one role entry.
func (l *linter) role(entry int, rp authz.RolePolicy, first map[string]int) []Finding {
	var own, out []Finding
	roleFinding := func(k Kind, format string, args ...any) {
		own = append(own, Finding{Kind: k, Role: rp.Role, Rule: -1, Message: fmt.Sprintf(format, args...)})
	}
	switch prev, dup := first[rp.Role]; {
	case rp.Role == "":
		roleFinding(Invalid, "role %q (entry %d): empty role name: name the role as callers' credentials carry it", rp.Role, entry)
	case dup:
		roleFinding(Invalid, "role %q (entry %d): duplicate role (entry %d defines it too): merge the two entries' accessPolicies", rp.Role, entry, prev)
	default:
		first[rp.Role] = entry
	}
	rules := make([]*rule, len(rp.AccessPolicies))
	allUsable := true
	for j, ap := range rp.AccessPolicies {
		r, fs := l.parse(rp.Role, j, ap)
		rules[j] = r
		out = append(out, fs...)
		allUsable = allUsable && r.usable
	}
	visible := l.visible(rules)
	for _, r := range rules {
		if !r.usable || len(r.methods) == 0 {
			continue
		}
		if r.deny {
			if allUsable {
				out = append(out, l.deadDeny(rp.Role, r, rules)...)
			}
			continue
		}
		out = append(out, l.valuesOnly(rp.Role, r, visible)...)
		if allUsable {
			out = append(out, l.templateOnly(rp.Role, r, rules)...)
		}
	}
	if allUsable && len(own) == 0 { // not for an unnamed or duplicate role
		if f, ok := l.noTools(rp.Role, rules, visible); ok {
			own = append(own, f)
		}
	}
	return append(own, out...)
}

// parse checks one rule's fields and returns the rule as the other
// checks use it: an effect or method in the wrong case counts as the one
// it stands for (and is reported), an unknown method is left out.
func (l *linter) parse(role string, j int, ap authz.AccessPolicy) (*rule, []Finding) {
	r := &rule{index: j, ap: ap}
	var out []Finding
	add := func(k Kind, format string, args ...any) {
		out = append(out, Finding{Kind: k, Role: role, Rule: j, Message: r.where(role) + ": " + fmt.Sprintf(format, args...)})
	}
	effectOK := true
	switch e := authz.Effect(strings.ToLower(string(ap.Effect))); {
	case e == authz.Allow || e == authz.Deny:
		r.deny = e == authz.Deny
		if e != ap.Effect {
			add(Invalid, "effect %q: write %q (authz refuses the policy otherwise)", ap.Effect, e)
		}
	case ap.Effect == "":
		effectOK = false
		add(Invalid, `no effect: write "effect": "allow" or "effect": "deny"`)
	default:
		effectOK = false
		add(Invalid, "effect %q: want %q or %q", ap.Effect, authz.Allow, authz.Deny)
	}
	if len(ap.Methods) == 0 {
		add(Invalid, `no methods: list the HTTP methods the rule applies to, e.g. "methods": ["GET"]`)
	}
	for _, m := range ap.Methods {
		u := strings.ToUpper(m)
		switch {
		case !slices.Contains(methods, u):
			hint := ""
			if m == "*" {
				hint = " (there is no wildcard: list each method)"
			}
			add(UnknownMethod, "method %q is no HTTP method authz accepts%s: use %s", m, hint, orList(methods))
			continue
		case u != m:
			add(UnknownMethod, "method %q: write %q (authz accepts upper-case methods only and refuses the policy otherwise)", m, u)
		}
		if slices.Contains(r.methods, u) {
			add(Invalid, "method %q listed twice: drop one", u)
			continue
		}
		r.methods = append(r.methods, u)
	}
	pathOK := false
	switch {
	case ap.Path == "":
		example := "^/service/api/items$"
		if len(l.routes) > 0 {
			example = authz.RolePolicyFor("", []tool.Route{l.routes[0].Route}).AccessPolicies[0].Path
		}
		add(Invalid, "empty path: write a regexp such as %q", example)
	default:
		if r.lang = l.lang(ap.Path); r.lang == nil {
			_, err := compileLang(ap.Path)
			add(Invalid, "path: %v: write a Go (RE2) regexp", err)
		} else {
			pathOK = true
		}
	}
	r.usable = effectOK && pathOK
	if r.usable && len(r.methods) > 0 {
		p, err := authz.NewPolicy([]authz.RolePolicy{{Role: "lint", AccessPolicies: []authz.AccessPolicy{{Path: ap.Path, Methods: r.methods, Effect: authz.Allow}}}})
		if err != nil {
			// authz refuses what the checks above let through: weigh the
			// rule no further rather than guess.
			r.usable = false
			add(Invalid, "%v", err)
		} else {
			r.alone = p
		}
	}
	return r, out
}

// orList returns "a, b or c".
func orList(s []string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// valuesOnly reports an allow rule that matches no route template for its
// methods but matches concrete paths of some that its role does not show
// (visible: the routes the role reaches).
func (l *linter) valuesOnly(role string, r *rule, visible []bool) []Finding {
	var candidates []*route
	for _, rt := range l.routes {
		if !r.has(rt.Method) {
			continue
		}
		if l.matchesTemplate(r, rt) {
			return nil
		}
		candidates = append(candidates, rt)
	}
	type hit struct {
		rt *route
		w  string
	}
	var hits []hit
	for _, rt := range candidates {
		if visible[rt.idx] {
			continue // another rule shows its tools
		}
		w := l.both(r.lang, rt.concrete)
		// The witness is a concrete path of rt (as the upstream transport
		// decides) that the rule allows (as authz decides): a claim made
		// by both, not by this package's automaton alone.
		if w.res == found && rt.Match(rt.Method, w.text) && allows(r.alone, tool.Route{URI: w.text, Method: rt.Method}) {
			hits = append(hits, hit{rt, w.text})
		}
	}
	if len(hits) == 0 {
		return nil
	}
	h := hits[0]
	var b strings.Builder
	fmt.Fprintf(&b, "%s: matches request paths such as %q of %s", r.where(role), h.w, h.rt.describe())
	if n := len(hits) - 1; n > 0 {
		others := make([]string, 0, min(n, maxListed))
		for _, o := range hits[1:min(len(hits), maxListed+1)] {
			others = append(others, o.rt.describe())
		}
		fmt.Fprintf(&b, " (and of %s", strings.Join(others, ", "))
		if n > maxListed {
			fmt.Fprintf(&b, " and %d more", n-maxListed)
		}
		b.WriteString(")")
	}
	ph := placeholderOf(h.rt.URI)
	fmt.Fprintf(&b, " but no route template, so it shows no tool: tools are shown by their templates, %q as written, and each request is checked against its concrete path. "+
		"Match the segment with [^/]+ (%q matches the template and every value of %s), "+
		"or, to allow only such values, add an allow rule for the template itself (%q: request paths are escaped, \"{\" is sent as %%7B, so it matches no request)",
		ph, templateAllow(h.rt.URI), ph, "^"+regexp.QuoteMeta(h.rt.URI)+"$")
	return []Finding{{Kind: ValuesOnly, Role: role, Rule: r.index, Message: b.String()}}
}

// placeholderOf returns the first "{name}" of a template ("{id}").
func placeholderOf(uri string) string {
	for _, seg := range strings.Split(uri, "/") {
		if isPlaceholder(seg) {
			return seg
		}
	}
	return "{}"
}

// templateAllow is the path regexp authz.RolePolicyFor writes for uri.
func templateAllow(uri string) string {
	return authz.RolePolicyFor("", []tool.Route{{URI: uri, Method: "GET"}}).AccessPolicies[0].Path
}

// templateOnly reports an allow rule that matches route templates as
// written whose concrete paths no allow rule of the role matches.
func (l *linter) templateOnly(role string, r *rule, rules []*rule) []Finding {
	var bad []*route
	for _, rt := range l.routes {
		if !l.matchesTemplate(r, rt) || !strings.Contains(rt.URI, "{") {
			continue
		}
		reached := false
		for _, o := range rules {
			if !o.deny && o.has(rt.Method) && l.both(o.lang, rt.concrete).res != empty {
				reached = true
				break
			}
		}
		if !reached {
			bad = append(bad, rt)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	rt := bad[0]
	example := l.both(rt.concrete, rt.concrete).text
	var b strings.Builder
	fmt.Fprintf(&b, "%s: matches the template of %s as written but none of its requests, such as %q, and no other allow rule of the role does: the tool is shown and every call of it refused", r.where(role), rt.describe(), example)
	if n := len(bad) - 1; n > 0 {
		fmt.Fprintf(&b, " (so are %d more route(s), %s)", n, describeAll(bad[1:]))
	}
	fmt.Fprintf(&b, ". A placeholder is matched as the text %q: match the segment with [^/]+ (%q)", placeholderOf(rt.URI), templateAllow(rt.URI))
	return []Finding{{Kind: TemplateOnly, Role: role, Rule: r.index, Message: b.String()}}
}

// describeAll lists at most maxListed routes.
func describeAll(rs []*route) string {
	var s []string
	for _, rt := range rs[:min(len(rs), maxListed)] {
		s = append(s, rt.describe())
	}
	if len(rs) > maxListed {
		s = append(s, fmt.Sprintf("and %d more", len(rs)-maxListed))
	}
	return strings.Join(s, ", ")
}

// deadDeny reports a deny rule that no allow rule of its role overlaps,
// neither on a request path nor on a route template.
func (l *linter) deadDeny(role string, d *rule, rules []*rule) []Finding {
	shared := false
	var sharedMethods []string
	for _, a := range rules {
		if a.deny || len(a.methods) == 0 {
			continue
		}
		common := false
		for _, m := range d.methods {
			if a.has(m) {
				common = true
				if !slices.Contains(sharedMethods, m) {
					sharedMethods = append(sharedMethods, m)
				}
			}
		}
		if !common {
			continue
		}
		shared = true
		if l.both(d.lang, a.lang).res != empty {
			return nil // they share a request path
		}
		for _, rt := range l.routes {
			if l.matchesTemplate(d, rt) && l.matchesTemplate(a, rt) {
				return nil // it hides a tool the allow rule shows
			}
		}
	}
	var b strings.Builder
	b.WriteString(d.where(role) + ": denies nothing: ")
	if !shared {
		fmt.Fprintf(&b, "no allow rule of the role applies to %s, and what a role does not allow is refused already", strings.Join(d.methods, " or "))
	} else {
		slices.SortFunc(sharedMethods, func(x, y string) int { return cmp.Compare(slices.Index(methods, x), slices.Index(methods, y)) })
		fmt.Fprintf(&b, "no allow rule of the role for %s matches a path it matches, and what a role does not allow is refused already", strings.Join(sharedMethods, " or "))
	}
	var reached, forMethods []*route
	for _, rt := range l.routes {
		if !d.has(rt.Method) {
			continue
		}
		forMethods = append(forMethods, rt)
		if l.both(d.lang, rt.concrete).res == found {
			reached = append(reached, rt)
		}
	}
	b.WriteString(". To carve an exception out of an allow rule, a deny rule must share its methods and overlap its path")
	switch {
	case len(reached) > 0:
		fmt.Fprintf(&b, "; this one matches requests of %s", describeAll(reached))
	case len(forMethods) > 0:
		fmt.Fprintf(&b, "; this one matches no request of any tool (the routes for its methods: %s)", describeAll(forMethods))
	default:
		b.WriteString("; this one matches no request of any tool")
	}
	return []Finding{{Kind: DeadDeny, Role: role, Rule: d.index, Message: b.String()}}
}

// exampleRoute returns the first route with a placeholder, or else the
// first route.
func (l *linter) exampleRoute() *route {
	for _, rt := range l.routes {
		if strings.Contains(rt.URI, "{") {
			return rt
		}
	}
	return l.routes[0]
}

// visible returns, by route, whether a role of the usable rules reaches
// it, as authz decides (deny overrides allow).
func (l *linter) visible(rules []*rule) []bool {
	var aps []authz.AccessPolicy
	for _, r := range rules {
		if !r.usable || len(r.methods) == 0 {
			continue
		}
		e := authz.Allow
		if r.deny {
			e = authz.Deny
		}
		aps = append(aps, authz.AccessPolicy{Path: r.ap.Path, Methods: r.methods, Effect: e})
	}
	p, err := authz.NewPolicy([]authz.RolePolicy{{Role: "lint", AccessPolicies: aps}})
	if err != nil {
		return make([]bool, len(l.routes)) // unreachable: parse lets only what authz accepts through
	}
	out, err := p.AllowMany(context.Background(), lintCaller, l.templates)
	if err != nil {
		return make([]bool, len(l.routes)) // unreachable: lintCaller has a role
	}
	return out
}

// noTools reports a role, about the table's services, that reaches no
// route of any tool (visible holds what it reaches).
func (l *linter) noTools(role string, rules []*rule, visible []bool) (Finding, bool) {
	if len(l.routes) == 0 {
		return Finding{}, false
	}
	if slices.Contains(visible, true) {
		return Finding{}, false
	}
	about, allowsSome := false, false
	for _, r := range rules {
		if r.deny {
			continue
		}
		allowsSome = true
		if !about {
			about = l.both(r.lang, l.services).res != empty
		}
	}
	if allowsSome && !about {
		// Every allow rule is about other services' paths: a role of a
		// shared policy that this service's tools are not for.
		return Finding{}, false
	}
	var b strings.Builder
	fmt.Fprintf(&b, "role %q: reaches no route of any tool, so a caller with only this role sees no tool but the local ones", role)
	if !allowsSome {
		b.WriteString(": it has no allow rule")
	}
	var list []string
	for _, rt := range l.routes[:min(len(l.routes), maxListed)] {
		list = append(list, rt.Route.String())
	}
	if n := len(l.routes) - maxListed; n > 0 {
		list = append(list, fmt.Sprintf("and %d more", n))
	}
	fmt.Fprintf(&b, ". The tools' routes are %s; an allow rule must match a route's template as written, placeholders included (a segment [^/]+ matches both the template and its values: %q)",
		strings.Join(list, ", "), templateAllow(l.exampleRoute().URI))
	return Finding{Kind: NoTools, Role: role, Rule: -1, Message: b.String()}, true
}
