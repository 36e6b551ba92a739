package tool

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
)

// Route is one (URI, method) pair, the unit an RBAC proxy in front of the
// upstream services authorizes.
//
// URI is the upstream path prefixed by its service key, as the proxy sees
// it: "/catalog/api/v1/items/{id}". A "{name}" segment is a placeholder
// filled from a tool's arguments with [Route.Bind]; it always stands for
// exactly one path segment. Method is an upper-case HTTP method.
//
// The zero Route is not valid; see [Route.Validate].
type Route struct {
	URI    string `json:"uri"`
	Method string `json:"method"`
}

// ServiceRoute returns the route of path on the service serviceKey:
// ServiceRoute("catalog", "GET", "/api/v1/items") is
// {URI: "/catalog/api/v1/items", Method: "GET"}. Services usually define a
// thin constructor over it:
//
//	func catalog(method, path string) tool.Route { return tool.ServiceRoute("catalog", method, path) }
//
// ServiceRoute does not validate; the registry does, at registration.
func ServiceRoute(serviceKey, method, path string) Route {
	return Route{URI: "/" + serviceKey + path, Method: method}
}

// String returns "METHOD URI".
func (r Route) String() string { return r.Method + " " + r.URI }

// methods are the HTTP methods a route may name.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// Validate reports whether r is a well-formed route template: a known
// upper-case method, and a URI that starts with "/", has no empty, "." or
// ".." segment, no query or fragment, no white space or control characters,
// no malformed percent-escape, and whose placeholders are whole segments
// with distinct identifier names.
func (r Route) Validate() error {
	if !slices.Contains(methods, r.Method) {
		return fmt.Errorf("route %s: method %q is not an upper-case HTTP method", r, r.Method)
	}
	_, err := parseTemplate(r.URI)
	if err != nil {
		return fmt.Errorf("route %s: %w", r, err)
	}
	return nil
}

// Placeholders returns the names of r's placeholders, in order.
func (r Route) Placeholders() []string {
	var names []string
	for _, seg := range strings.Split(r.URI, "/") {
		if name, ok := placeholder(seg); ok {
			names = append(names, name)
		}
	}
	return names
}

// parseTemplate splits a route URI into its segments (without the leading
// empty one) and checks every rule of [Route.Validate] on it.
func parseTemplate(uri string) ([]string, error) {
	if !strings.HasPrefix(uri, "/") {
		return nil, errors.New("URI must start with \"/\"")
	}
	if i := strings.IndexAny(uri, "?#"); i >= 0 {
		return nil, fmt.Errorf("URI must not contain a query or fragment (%q at offset %d)", uri[i], i)
	}
	for i, c := range uri {
		if c <= ' ' || c == 0x7f || (c >= 0x80 && c <= 0x9f) || c == '\u00a0' || c == '\u2028' || c == '\u2029' {
			return nil, fmt.Errorf("URI must not contain white space or control characters (%q at offset %d)", c, i)
		}
	}
	segs := strings.Split(uri[1:], "/")
	seen := map[string]bool{}
	for _, seg := range segs {
		switch seg {
		case "":
			return nil, errors.New("URI must not contain an empty segment (\"//\" or a trailing \"/\")")
		case ".", "..":
			return nil, fmt.Errorf("URI must not contain a %q segment", seg)
		}
		if name, ok := placeholder(seg); ok {
			if !isIdent(name) {
				return nil, fmt.Errorf("placeholder %q: name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)", seg)
			}
			if seen[name] {
				return nil, fmt.Errorf("placeholder {%s} appears twice", name)
			}
			seen[name] = true
			continue
		}
		if strings.ContainsAny(seg, "{}") {
			return nil, fmt.Errorf("segment %q: a placeholder must be a whole segment \"{name}\"", seg)
		}
		if _, err := url.PathUnescape(seg); err != nil {
			return nil, fmt.Errorf("segment %q: malformed percent-escape", seg)
		}
		if u, _ := url.PathUnescape(seg); u == "." || u == ".." {
			return nil, fmt.Errorf("segment %q: must not decode to %q", seg, u)
		}
	}
	return segs, nil
}

func placeholder(seg string) (string, bool) {
	if len(seg) >= 2 && seg[0] == '{' && seg[len(seg)-1] == '}' {
		return seg[1 : len(seg)-1], true
	}
	return "", false
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Bind returns r with every placeholder replaced by the [url.PathEscape]d
// value of the same name. It refuses a missing or unknown name, and a
// value that is empty, "." or "..", or holds a control character: a
// caller-controlled value can never add a segment ("/" is escaped to %2F)
// nor climb one.
//
// The result's URI is an escaped path; [Route.Match] of the bound route's
// method and URI against r is always true.
func (r Route) Bind(values map[string]string) (Route, error) {
	segs, err := parseTemplate(r.URI)
	if err != nil {
		return Route{}, fmt.Errorf("bind %s: %w", r, err)
	}
	used := 0
	var b strings.Builder
	for _, seg := range segs {
		b.WriteByte('/')
		name, ok := placeholder(seg)
		if !ok {
			b.WriteString(seg)
			continue
		}
		v, ok := values[name]
		if !ok {
			return Route{}, fmt.Errorf("bind %s: no value for {%s}", r, name)
		}
		used++
		if err := checkValue(v); err != nil {
			return Route{}, fmt.Errorf("bind %s: {%s}: %w", r, name, err)
		}
		b.WriteString(url.PathEscape(v))
	}
	if used != len(values) {
		for name := range values {
			if !strings.Contains(r.URI, "{"+name+"}") {
				return Route{}, fmt.Errorf("bind %s: unknown placeholder {%s}", r, name)
			}
		}
	}
	return Route{URI: b.String(), Method: r.Method}, nil
}

func checkValue(v string) error {
	switch v {
	case "":
		return errors.New("empty value")
	case ".", "..":
		return fmt.Errorf("value %q would climb a path segment", v)
	}
	for _, c := range v {
		if c < ' ' || c == 0x7f || (c >= 0x80 && c <= 0x9f) {
			return fmt.Errorf("value %q holds a control character", v)
		}
	}
	return nil
}

// Match reports whether a concrete request (method, escaped path as in
// [url.URL.EscapedPath], service prefix included) falls under the route
// template r. Literal segments must be equal; a placeholder matches exactly
// one non-empty segment that is not "." or ".." (nor their escaped forms).
// "%2F" stays inside its segment. An invalid template matches nothing.
func (r Route) Match(method, escapedPath string) bool {
	if method != r.Method || !strings.HasPrefix(escapedPath, "/") {
		return false
	}
	tmpl := r.URI[min(1, len(r.URI)):]
	path := escapedPath[1:]
	for {
		ti := strings.IndexByte(tmpl, '/')
		pi := strings.IndexByte(path, '/')
		if (ti < 0) != (pi < 0) {
			return false
		}
		ts, ps := tmpl, path
		if ti >= 0 {
			ts, ps = tmpl[:ti], path[:pi]
		}
		if _, ok := placeholder(ts); ok {
			if !validSegmentValue(ps) {
				return false
			}
		} else if ts != ps || ts == "" {
			return false
		}
		if ti < 0 {
			return true
		}
		tmpl, path = tmpl[ti+1:], path[pi+1:]
	}
}

func validSegmentValue(seg string) bool {
	if seg == "" || seg == "." || seg == ".." {
		return false
	}
	if strings.IndexByte(seg, '%') >= 0 {
		u, err := url.PathUnescape(seg)
		if err != nil || u == "." || u == ".." {
			return false
		}
	}
	return true
}
