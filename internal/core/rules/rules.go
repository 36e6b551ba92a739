// Package rules holds the rules a tool declaration must keep, in one
// place for the two that apply them: the registry's Check, to a
// declared [tool.Tool] at run time, and the registry/vet analyzer, to
// what the source shows of a declaration at compile time. Each rule's
// text is the RULE part of the registry's message
//
//	registry: tool "NAME" (registered at FILE:LINE): RULE
//
// and the analyzer's diagnostic.
//
// [Check] knows which fields it may read: a field the caller does not
// know (its value is built at run time) is marked in [Decl.Unknown], and
// every rule that reads it is skipped, so that a partial declaration
// yields only problems that the whole one has too.
package rules

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/tool"
)

// Field names a field of a tool declaration.
type Field uint

// The fields of a declaration that rules read.
const (
	Name Field = 1 << iota
	Description
	ServiceKey
	Routes // the slice: its length; each route is known or not on its own
	Local
	Behaviour
	Handler
	Sends // the routes the handler declares it sends on

	Task
	TaskAfter
	Deprecated          // the pointer: whether the tool is deprecated
	DeprecatedReason    // Deprecated.Reason
	DeprecatedSuccessor // Deprecated.Successor
	Version
	Tags  // the slice, every tag: known when each is
	Icons // every icon's Source: known when each is
	Cache // the pointer: whether results are cached
	CacheTTL
	CacheStaleOnError

	// All is every field: what is known of a literal without keys.
	All Field = 1<<iota - 1
)

// Decl is what is known of one declaration.
type Decl struct {
	Name        string
	Description string
	ServiceKey  string
	Routes      []tool.Route
	Local       bool
	Behaviour   behaviour.Behaviour
	// Handler is what is wrong with the handler ([ErrMissingHandler],
	// or why its types do not serve), nil if nothing. Errors joined by
	// errors.Join are one problem each.
	Handler error
	// Sends are the routes the handler declares it sends upstream
	// requests on (tool.Handler.Sends): each must be one of Routes.
	Sends []tool.Route
	// FirstSite is where a tool of the same name was registered first,
	// "" if none was.
	FirstSite string

	Task       tool.TaskMode
	TaskAfter  time.Duration
	Deprecated *tool.Deprecation // nil: not deprecated
	Version    string
	Tags       []string
	Icons      []mcp.Icon
	Cache      *tool.ResultCache // nil: results are not cached

	// Unknown holds the fields whose values are not known.
	Unknown Field
	// RouteUnknown[i] reports that Routes[i] is not known; nil if every
	// route is.
	RouteUnknown []bool
}

// Problem is one rule a declaration breaks.
type Problem struct {
	// Field is the field at fault; for a problem of two fields (a Local
	// tool with routes) the one to change.
	Field Field
	// Index is the index of the element at fault in Field's list (a
	// route of Routes, a tag of Tags, an icon of Icons), -1 if the
	// problem is not one element's.
	Index int
	// Text is the rule, as the registry's message ends.
	Text string
}

// ErrMissingHandler is the rule of a zero Handler.
var ErrMissingHandler = errors.New("missing Handler (use tool.Handle or tool.HandleResult)")

// Known reports whether d knows the value of field f.
func (d *Decl) Known(f Field) bool { return d.Unknown&f == 0 }

func (d *Decl) routeKnown(i int) bool { return d.RouteUnknown == nil || !d.RouteUnknown[i] }

// Check calls report with every rule d breaks, in the registry's order,
// skipping the rules that read a field d does not know.
func Check(d *Decl, report func(Problem)) {
	fail := func(f Field, i int, format string, args ...any) {
		report(Problem{Field: f, Index: i, Text: fmt.Sprintf(format, args...)})
	}
	if d.Known(Name) {
		if err := CheckName(d.Name); err != nil {
			fail(Name, -1, "%v", err)
		}
	}
	if d.FirstSite != "" {
		fail(Name, -1, "%s", DuplicateName(d.FirstSite))
	}
	if d.Known(Description) && strings.TrimSpace(d.Description) == "" {
		fail(Description, -1, "missing Description")
	}
	if d.Known(Behaviour) && !d.Behaviour.Valid() {
		fail(Behaviour, -1, "Behaviour is %v: declare behaviour.ReadOnly, behaviour.Additive or behaviour.Destructive", d.Behaviour)
	}
	if d.Known(Handler) && d.Handler != nil {
		for _, err := range joined(d.Handler) {
			fail(Handler, -1, "%v", err)
		}
	}
	keyKnown := d.Known(ServiceKey)
	if d.Known(Local) {
		if d.Local {
			if d.Known(Routes) && len(d.Routes) > 0 {
				fail(Routes, -1, "a Local tool must not declare VisibilityRoutes (it calls no upstream)")
			}
			if keyKnown && d.ServiceKey != "" {
				fail(ServiceKey, -1, "a Local tool must not declare a ServiceKey (it calls no upstream)")
			}
		} else {
			switch {
			case d.Known(Routes) && len(d.Routes) == 0:
				fail(Routes, -1, "no VisibilityRoutes and not Local: declare the upstream routes the tool reaches, or Local for a tool that calls no upstream")
			case d.Known(Routes) && keyKnown && d.ServiceKey == "":
				fail(ServiceKey, -1, "VisibilityRoutes without a ServiceKey: name the upstream service the tool calls")
			}
		}
		if !d.Local && keyKnown && d.ServiceKey != "" {
			if err := CheckServiceKey(d.ServiceKey); err != nil {
				fail(ServiceKey, -1, "%v", err)
			}
		}
	}
	if d.Known(Routes) {
		checkRoutes(d, fail)
	}
	checkTask(d, fail)
	checkLifecycle(d, fail)
	checkCache(d, fail)
}

// checkRoutes applies the rules of d's routes, which are known, and of
// the routes its handler sends on.
func checkRoutes(d *Decl, fail failFunc) {
	keyKnown := d.Known(ServiceKey)
	if d.Known(Sends) && d.RouteUnknown == nil {
		for _, s := range d.Sends {
			if !slices.Contains(d.Routes, s) {
				fail(Handler, -1, "the handler sends requests on %s, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)", s)
			}
		}
	}
	var seen map[tool.Route]tool.Route // by the route with its placeholders unnamed
	if len(d.Routes) > 1 {
		seen = make(map[tool.Route]tool.Route, len(d.Routes))
	}
	for i, rt := range d.Routes {
		if !d.routeKnown(i) {
			continue
		}
		if err := rt.Validate(); err != nil {
			fail(Routes, i, "invalid %v", err)
			continue
		}
		if keyKnown && d.ServiceKey != "" && !strings.HasPrefix(rt.URI, "/"+d.ServiceKey+"/") {
			hint := ""
			if rest, ok := strings.CutPrefix(rt.URI, "/"+d.ServiceKey); ok && rest != "" {
				hint = `; if it was built with tool.ServiceRoute, the path must start with "/"`
			}
			fail(Routes, i, "route %s is outside service %q (its URI must start with %q%s)", rt, d.ServiceKey, "/"+d.ServiceKey+"/", hint)
		}
		if seen == nil {
			continue
		}
		key := unnamed(rt)
		if prev, ok := seen[key]; ok {
			if prev == rt {
				fail(Routes, i, "duplicate route %s", rt)
			} else {
				fail(Routes, i, "duplicate route %s (the same as %s: placeholder names do not tell routes apart)", rt, prev)
			}
		}
		seen[key] = rt
	}
}

// joined returns the errors err joins, as errors.Join does (depth
// first), or err alone: a handler's problems are one rule each. An
// error that wraps several without being their join (fmt.Errorf with
// two %w) is one problem: its text is not theirs.
func joined(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	errs := j.Unwrap()
	texts := make([]string, len(errs))
	for i, e := range errs {
		texts[i] = e.Error()
	}
	if err.Error() != strings.Join(texts, "\n") {
		return []error{err}
	}
	var out []error
	for _, e := range errs {
		out = append(out, joined(e)...)
	}
	return out
}

// DuplicateName is the rule of a name registered already, first at site.
func DuplicateName(site string) string {
	return "duplicate tool name, first registered at " + site
}

// CheckName returns the rule an MCP tool name breaks (1 to 128 of A-Z
// a-z 0-9 _ . -), nil if none.
func CheckName(name string) error {
	if name == "" {
		return errors.New("empty Name")
	}
	if len(name) > 128 {
		return fmt.Errorf("Name is %d bytes long, at most 128 allowed", len(name))
	}
	for _, c := range name {
		if !validNameRune(c) {
			return fmt.Errorf("Name contains %q: only A-Z a-z 0-9 _ . - are allowed", c)
		}
	}
	return nil
}

func validNameRune(c rune) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.'
}

// CheckServiceKey requires a key that stands unescaped as one path
// segment, the same in every spelling of a route: RFC 3986's unreserved
// characters, not "." or "..".
func CheckServiceKey(key string) error {
	plain := key != "." && key != ".." && !strings.ContainsFunc(key, func(c rune) bool {
		return !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~')
	})
	if !plain {
		return fmt.Errorf("ServiceKey %q is not a plain path segment: use letters, digits, \"-\", \".\", \"_\" and \"~\"", key)
	}
	return nil
}

// unnamed returns rt with its placeholders' names removed: two routes
// that differ only there are one route to a proxy.
func unnamed(rt tool.Route) tool.Route {
	if !strings.Contains(rt.URI, "{") {
		return rt
	}
	segs := strings.Split(rt.URI, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = "{}"
		}
	}
	return tool.Route{URI: strings.Join(segs, "/"), Method: rt.Method}
}
