package tool

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
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
// path is the service's own path: it starts with "/" and does not
// include the service key, which ServiceRoute adds ("/catalog/api/..."
// makes "/catalog/catalog/api/...": right only if the catalog service's
// own paths start with "/catalog"). ServiceRoute does not validate; the
// registry does, at registration. [Route.ServicePath] gives path back.
func ServiceRoute(serviceKey, method, path string) Route {
	return Route{URI: "/" + serviceKey + path, Method: method}
}

// ServicePath returns the path of r on its service itself: its URI
// without the first segment, the service key. For a bound route it is
// the escaped path of the upstream request, to resolve against the
// service's origin:
//
//	b, err := tool.ServiceRoute("catalog", "GET", "/api/v1/items/{id}").Bind(map[string]string{"id": "a b"})
//	// b.ServicePath() == "/api/v1/items/a%20b": GET http://catalog:8080/api/v1/items/a%20b
//
// It inverts [ServiceRoute]: ServiceRoute(key, m, path).ServicePath() is
// path for every path that starts with "/". The route of the service's
// root, ServiceRoute("catalog", m, "/") ("/catalog/"), gives "/", and so
// does "/catalog", which no request matches. ServicePath does not
// validate r; [Route.Validate]
// and the registry do.
func (r Route) ServicePath() string {
	rest := strings.TrimPrefix(r.URI, "/")
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		return rest[i:]
	}
	return "/"
}

// String returns "METHOD URI".
func (r Route) String() string { return r.Method + " " + r.URI }

// methods are the HTTP methods a route may name.
var methods = []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "CONNECT", "TRACE"}

// Validate reports whether r is a well-formed route template: a known
// upper-case method, and a URI that starts with "/", has no empty, "." or
// ".." segment (nor one that decodes to "." or ".."; the last segment of
// a URI of several may be empty, a trailing "/": "/svc/" is a service's
// root, "/svc/items/" a path of its own, and neither matches a request
// without it), no query or
// fragment, no white space or control characters, no malformed
// percent-escape, whose placeholders are whole segments with distinct
// identifier names, and whose literal text is in escaped form (ASCII
// letters, digits, -._~!$&'()*+,;=:@ and percent-escapes: "/caf%C3%A9",
// not "/café"), as a request's escaped path shows it.
func (r Route) Validate() error {
	if err := r.check(); err != nil {
		return fmt.Errorf("route %s: %w", r, err)
	}
	return nil
}

// check is Validate without the route in the message. It allocates only
// to report an error: [Route.Match] runs it on every call.
func (r Route) check() error {
	if !slices.Contains(methods, r.Method) {
		return fmt.Errorf("method %q is not an upper-case HTTP method", r.Method)
	}
	return checkTemplate(r.URI)
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

// checkTemplate checks every URI rule of [Route.Validate], in one pass
// over the bytes of uri.
func checkTemplate(uri string) error {
	if !strings.HasPrefix(uri, "/") {
		return errors.New("URI must start with \"/\"")
	}
	start := 1       // of the current segment
	special := false // the current segment holds '{', '}' or '%'
	for i := 1; i <= len(uri); i++ {
		if i == len(uri) || uri[i] == '/' {
			if i == len(uri) && start == i && start > 1 {
				break // a trailing "/": the empty last segment of a path like "/svc/" or "/svc/items/"
			}
			if err := checkSegment(uri[start:i], uri[:start], special); err != nil {
				return err
			}
			start, special = i+1, false
			continue
		}
		switch c := uri[i]; {
		case c == '?' || c == '#':
			return fmt.Errorf("URI must not contain a query or fragment (%q at offset %d)", c, i)
		case c <= ' ' || c == 0x7f:
			return fmt.Errorf("URI must not contain white space or control characters (%q at offset %d)", c, i)
		case c == '{' || c == '}' || c == '%':
			special = true
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRuneInString(uri[i:])
			if r == utf8.RuneError && n == 1 {
				return fmt.Errorf("URI must be valid UTF-8 (byte %#x at offset %d)", c, i)
			}
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				return fmt.Errorf("URI must not contain white space or control characters (%q at offset %d)", r, i)
			}
			return fmt.Errorf("URI must be in escaped form: percent-encode %q (at offset %d) as %s", r, i, url.PathEscape(string(r)))
		case !pchar(c):
			return fmt.Errorf("URI must be in escaped form: percent-encode %q (at offset %d) as %%%02X", c, i, c)
		}
	}
	return nil
}

// pchar reports whether the ASCII byte c may stand unescaped in a path
// segment (RFC 3986: unreserved, sub-delims, ":" and "@"). A template
// literal must be written as it appears in a request's escaped path, or
// [Route.Match] could never match it.
func pchar(c byte) bool {
	switch {
	case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		return true
	}
	return strings.IndexByte("-._~!$&'()*+,;=:@", c) >= 0
}

// checkSegment checks one segment of a template; before is the part of
// the URI that precedes it (for duplicate placeholders), special whether
// seg holds a brace or a percent sign.
func checkSegment(seg, before string, special bool) error {
	switch seg {
	case "":
		return errors.New("URI must not contain an empty segment (\"//\", or \"/\" alone; only the last may be empty: a trailing \"/\")")
	case ".", "..":
		return fmt.Errorf("URI must not contain a %q segment", seg)
	}
	if head, _, ok := strings.Cut(seg, ";"); ok && (head == "." || head == "..") {
		return fmt.Errorf("URI must not contain a %q segment (%q: servers read a dot segment with a parameter as the dot segment)", head, seg)
	}
	if !special {
		return nil
	}
	if name, ok := placeholder(seg); ok {
		if !isIdent(name) {
			return fmt.Errorf("placeholder %q: name must be an identifier ([A-Za-z_][A-Za-z0-9_]*)", seg)
		}
		for prev := range strings.SplitSeq(before[1:], "/") {
			if prev == seg {
				return fmt.Errorf("placeholder {%s} appears twice", name)
			}
		}
		return nil
	}
	if strings.ContainsAny(seg, "{}") {
		return fmt.Errorf("segment %q: a placeholder must be a whole segment \"{name}\"", seg)
	}
	u, err := url.PathUnescape(seg)
	if err != nil {
		return fmt.Errorf("segment %q: malformed percent-escape", seg)
	}
	if u == "." || u == ".." {
		return fmt.Errorf("segment %q: must not decode to %q", seg, u)
	}
	if err := canonicalEscapes(seg); err != nil {
		return err
	}
	if err := segmentProblem(u); err != nil {
		return fmt.Errorf("segment %q: %w", seg, err)
	}
	return nil
}

// canonicalEscapes checks that seg's percent-escapes are in the one form
// (RFC 3986's normalization, and what Go writes): upper-case hex, and
// only for bytes that need one. Two spellings of one path would be two
// routes to the registry and one to a proxy.
func canonicalEscapes(seg string) error {
	for i := 0; i+2 < len(seg); i++ {
		if seg[i] != '%' {
			continue
		}
		esc := seg[i : i+3]
		if up := strings.ToUpper(esc); up != esc {
			return fmt.Errorf("segment %q: write the escape %s in upper case, %s", seg, esc, up)
		}
		if b, _ := url.PathUnescape(esc); len(b) == 1 && (isIdentByte(b[0]) || strings.IndexByte("-.~", b[0]) >= 0) {
			return fmt.Errorf("segment %q: %s is %q, which needs no escape: write %q", seg, esc, b, b)
		}
		i += 2
	}
	return nil
}

func isIdentByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
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

// Bind returns r with every placeholder replaced by the value of the same
// name, escaped by [net/url.PathEscape]. It refuses a route that does not
// pass [Route.Validate], a missing or unknown name, and a value that is
// empty, "." or "..", or holds "/", "\" or a control character, also once
// percent-decoded (up to three times) and in every Unicode normalization
// form ("‥" and "︰" are ".." in NFKC, "／" and "℀" hold "/"): a
// caller-controlled value can never add a path segment nor climb one.
// Escaping "/" as %2F would not be enough: proxies and frameworks that
// decode %2F before routing (or take "\" for "/", or read "..;x" as "..")
// would read a new segment, and "..%2F..%2Fadmin" would climb out of the
// route that was authorized.
//
// The result's URI is an escaped path; [Route.Match] of the bound route's
// method and URI against r is always true.
func (r Route) Bind(values map[string]string) (Route, error) {
	if err := r.check(); err != nil {
		return Route{}, fmt.Errorf("bind %s: %w", r, err)
	}
	used := 0
	var b strings.Builder
	b.Grow(len(r.URI))
	for _, seg := range strings.Split(r.URI[1:], "/") {
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
		names := r.Placeholders()
		unknown := make([]string, 0, len(values)-used)
		for name := range values {
			if !slices.Contains(names, name) {
				unknown = append(unknown, name)
			}
		}
		slices.Sort(unknown)
		return Route{}, fmt.Errorf("bind %s: unknown placeholder {%s}", r, unknown[0])
	}
	return Route{URI: b.String(), Method: r.Method}, nil
}

func checkValue(v string) error {
	if v == "" {
		return errors.New("empty value")
	}
	return segmentProblem(v)
}

// maxDecodes bounds how many times segmentProblem decodes a value, as
// the hops between toolroute and the upstream's router might.
const maxDecodes = 3

// segmentProblem says why v, a value bound into one path segment, could
// leave that segment on its way to the upstream, or returns nil.
//
// The hops between toolroute and the upstream's router may percent-decode
// a path (some more than once) and normalize it to Unicode NFC, NFD,
// NFKC or NFKD, in any order. segmentProblem looks at every text v can
// become that way, with up to [maxDecodes] percent-decodings ("%2e%2e",
// "..%2F..%2Fadmin", "..%252F..%252Fadmin", "％２Ｆ" via NFKC), and
// refuses v if any of them:
//   - is "." or "..", also with a ";parameter" ("..;x": Tomcat, Jetty
//     and Spring read it as ".."): "‥" and "︰" become ".." under NFKC;
//   - holds "/" or "\": "／", "℀" ("a/c") and "﹨" do under NFKC;
//   - holds a control character;
//   - is not valid UTF-8 ("..%c0%af": an overlong "/" that lenient
//     decoders read as one);
//   - holds a character that Windows' best-fit conversion to a code page
//     turns into "/" (see [bestFitSlash]: these come from no Unicode
//     normalization form);
//   - still changes when decoded once more.
//
// The normalization rule is derived from Unicode's data (through
// golang.org/x/text/unicode/norm), not from a list of look-alikes.
// An ASCII text is its own normal form in all four, so the common case
// costs one scan per decoding; a non-ASCII one that needs no
// decomposition one more look-up per character.
func segmentProblem(v string) error {
	return stagesProblem(v, v, 0, trail{})
}

// normForms are the Unicode normalization forms an upstream hop may
// apply; compatibility forms first, as they change the most.
var normForms = [...]struct {
	name string
	form norm.Form
}{{"NFKC", norm.NFKC}, {"NFKD", norm.NFKD}, {"NFC", norm.NFC}, {"NFD", norm.NFD}}

// stagesProblem checks stage, which v became after decodes
// percent-decodings and the steps of how, and every text stage becomes
// in turn. Normalizing a normalized text again gives one of the four
// forms of the original (NFD of NFKC is NFKD, and so on), so each stage
// is normalized once, and each form is decoded further.
func stagesProblem(v, stage string, decodes int, how trail) error {
	if err := stageProblem(v, stage, how); err != nil {
		return err
	}
	if !isASCII(stage) && normalizationMatters(stage) {
		for i, f := range normForms {
			if f.form.IsNormalString(stage) {
				continue
			}
			n := f.form.String(stage)
			if err := stageProblem(v, n, how.then(uint8(i+1))); err != nil {
				return err
			}
			if strings.IndexByte(n, '%') >= 0 {
				if err := decodeProblem(v, n, decodes, how.then(uint8(i+1))); err != nil {
					return err
				}
			}
		}
	}
	if strings.IndexByte(stage, '%') < 0 {
		return nil
	}
	return decodeProblem(v, stage, decodes, how)
}

// decodeProblem checks what stage becomes once percent-decoded.
func decodeProblem(v, stage string, decodes int, how trail) error {
	next, err := url.PathUnescape(stage)
	if err != nil || next == stage {
		return nil
	}
	if decodes == maxDecodes {
		return fmt.Errorf("value %q is encoded more than %d times", v, maxDecodes)
	}
	return stagesProblem(v, next, decodes+1, how.then(decoded))
}

// trail records how a value became the text being checked: its steps, in
// order, each [decoded] or 1 + an index of [normForms]. It is described
// only for an error, so checking allocates nothing for it.
type trail struct {
	steps [2*maxDecodes + 2]uint8
	n     int
}

// decoded is the step of a percent-decoding.
const decoded = 0

func (t trail) then(step uint8) trail {
	t.steps[t.n] = step
	t.n++
	return t
}

// describe says how the value became stage: ` once NFKC-normalized and
// decoded twice ("../admin")`, or "" for the value itself.
func (t trail) describe(stage string) string {
	if t.n == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" once ")
	for i := 0; i < t.n; {
		if i > 0 {
			b.WriteString(" and ")
		}
		if t.steps[i] != decoded {
			b.WriteString(normForms[t.steps[i]-1].name + "-normalized")
			i++
			continue
		}
		run := 0
		for ; i < t.n && t.steps[i] == decoded; i++ {
			run++
		}
		b.WriteString([...]string{"", "decoded", "decoded twice", "decoded 3 times"}[run])
	}
	fmt.Fprintf(&b, " (%q)", stage)
	return b.String()
}

// normalizationMatters reports whether a normalization form of s may
// hold what s does not: ".", "/", "\", ";", "%", a control character or
// a best-fit slash. Only a decomposition brings a character in
// (composition merges a letter and its marks into one non-ASCII
// character), so it looks up the compatibility decomposition of each
// character of s, which allocates nothing. Once s holds a "%", any
// decomposed letter or digit may complete an escape: then it does.
// The common non-ASCII text ("café": "e" and a mark) costs a look-up
// per character.
func normalizationMatters(s string) bool {
	if strings.IndexByte(s, '%') >= 0 {
		return true
	}
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		p := norm.NFKD.PropertiesString(s[i:])
		for d := p.Decomposition(); len(d) > 0; {
			c, n := utf8.DecodeRune(d)
			if c < ' ' || c == 0x7f || (c >= 0x80 && c <= 0x9f) || strings.ContainsRune(`./\;%`+bestFitSlash, c) {
				return true
			}
			d = d[n:]
		}
		i += max(p.Size(), 1)
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// stageProblem checks one text v became (how says how).
func stageProblem(v, stage string, how trail) error {
	head, _, _ := strings.Cut(stage, ";")
	if head == "." || head == ".." {
		return fmt.Errorf("value %q would climb a path segment%s", v, how.describe(stage))
	}
	if !utf8.ValidString(stage) {
		// "%c0%af" is an overlong "/": decoders that accept overlong
		// forms (old IIS, some Java ones) read a separator there.
		return fmt.Errorf("value %q is not valid UTF-8%s, which an upstream may decode to anything (\"%%c0%%af\" is an overlong \"/\")", v, how.describe(stage))
	}
	for _, c := range stage {
		switch {
		case c < ' ' || c == 0x7f || (c >= 0x80 && c <= 0x9f):
			return fmt.Errorf("value %q holds a control character%s", v, how.describe(stage))
		case c == '/' || c == '\\':
			return fmt.Errorf("value %q holds %q%s, which an upstream may read as a path separator", v, c, how.describe(stage))
		case c >= 0x2000 && strings.ContainsRune(bestFitSlash, c):
			return fmt.Errorf("value %q holds %q%s, which Windows' best-fit conversion turns into \"/\"", v, c, how.describe(stage))
		}
	}
	return nil
}

// bestFitSlash holds the characters that Windows' best-fit mapping to
// code pages turns into "/" although no Unicode normalization form does:
// DIVISION SLASH, FRACTION SLASH (also what NFKC makes of "¼") and BIG
// SOLIDUS. (Every other look-alike of ".", "/" or "\" is found through
// Unicode normalization.)
const bestFitSlash = "\u2215\u2044\u29F8"

// Match reports whether a concrete request (method, escaped path as in
// [url.URL.EscapedPath], service prefix included) falls under the route
// template r. Literal segments must be equal; a placeholder matches exactly
// one non-empty segment whose decoded value [Route.Bind] would accept (no
// dot segment, separator or control character, at any depth of encoding
// and in any Unicode normalization form: "%2F", "%252F", "..;",
// "%EF%BC%8E" and "%EF%B8%B0" match nothing), so
// a handler that builds a path by hand is held to Bind's rule. An invalid
// template matches nothing.
func (r Route) Match(method, escapedPath string) bool {
	if method != r.Method || !strings.HasPrefix(escapedPath, "/") || r.check() != nil {
		return false
	}
	tmpl := r.URI[1:]
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
		} else if ts != ps || ts == "" && ti >= 0 {
			return false // a literal segment; an empty one only last, as a trailing "/"
		}
		if ti < 0 {
			return true
		}
		tmpl, path = tmpl[ti+1:], path[pi+1:]
	}
}

func validSegmentValue(seg string) bool {
	if seg == "" || strings.IndexByte(seg, '\\') >= 0 {
		return false
	}
	v, err := url.PathUnescape(seg)
	return err == nil && v != "" && segmentProblem(v) == nil
}
