package tool_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/tool"
)

func TestServiceRoute(t *testing.T) {
	got := tool.ServiceRoute("catalog", http.MethodGet, "/api/v1/items/{id}")
	want := tool.Route{URI: "/catalog/api/v1/items/{id}", Method: "GET"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ServiceRoute mismatch (-want +got):\n%s", diff)
	}
	if err := got.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	if s := got.String(); s != "GET /catalog/api/v1/items/{id}" {
		t.Errorf("String() = %q", s)
	}
}

func TestServicePath(t *testing.T) {
	for _, tt := range []struct {
		route tool.Route
		want  string
	}{
		{tool.ServiceRoute("catalog", "GET", "/api/v1/items/{id}"), "/api/v1/items/{id}"},
		{tool.ServiceRoute("catalog", "GET", "/items"), "/items"},
		{tool.ServiceRoute("catalog", "GET", ""), "/"},
		{tool.Route{URI: "/catalog/a%2Fb/c%20d", Method: "GET"}, "/a%2Fb/c%20d"},
	} {
		if got := tt.route.ServicePath(); got != tt.want {
			t.Errorf("%v.ServicePath() = %q, want %q", tt.route, got, tt.want)
		}
	}

	// A bound route's ServicePath is the escaped path of the upstream
	// request; the service key and that path are what authz's transport
	// checks against the template.
	tmpl := tool.ServiceRoute("catalog", "GET", "/api/v1/items/{id}")
	for _, id := range []string{"42", "a b", "café", "100%", "a?b#c", "v1.2"} {
		b, err := tmpl.Bind(map[string]string{"id": id})
		if err != nil {
			t.Fatalf("Bind(%q): %v", id, err)
		}
		u, err := url.Parse("http://127.0.0.1:8080" + b.ServicePath())
		if err != nil {
			t.Fatalf("%q: %v", b.ServicePath(), err)
		}
		if u.EscapedPath() != b.ServicePath() || u.RawQuery != "" || u.Fragment != "" {
			t.Errorf("id %q: the request URL %v has escaped path %q, query %q, fragment %q; want path %q alone", id, u, u.EscapedPath(), u.RawQuery, u.Fragment, b.ServicePath())
		}
		if got := strings.TrimPrefix(u.Path, "/api/v1/items/"); got != id {
			t.Errorf("id %q: the upstream reads %q", id, got)
		}
		if !tmpl.Match("GET", "/catalog"+u.EscapedPath()) {
			t.Errorf("id %q: %v does not match the request path %q", id, tmpl, u.EscapedPath())
		}
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		route   tool.Route
		wantErr string // "" = valid
	}{
		// Positive controls.
		{"plain", tool.Route{"/svc/items", "GET"}, ""},
		{"root segment only", tool.Route{"/svc", "GET"}, ""},
		{"placeholder", tool.Route{"/svc/items/{id}", "GET"}, ""},
		{"two placeholders", tool.Route{"/svc/{a}/x/{b_2}", "DELETE"}, ""},
		{"underscore placeholder", tool.Route{"/svc/{_id}", "GET"}, ""},
		{"placeholder first", tool.Route{"/{svc}/x", "GET"}, ""},
		{"escaped percent literal", tool.Route{"/svc/100%25", "GET"}, ""},
		{"dots inside segment", tool.Route{"/svc/v1.2/..x/.hidden/x..", "GET"}, ""},
		{"three dots", tool.Route{"/svc/...", "GET"}, ""},
		{"escaped unicode literal", tool.Route{"/svc/caf%C3%A9", "GET"}, ""},
		// One spelling of each path: escapes in upper case, and only
		// where needed (two spellings would be two routes to the
		// registry and one to a proxy).
		{"lowercase escape", tool.Route{"/svc/caf%c3%a9", "GET"}, `segment "caf%c3%a9": write the escape %c3 in upper case, %C3`},
		{"needless escape", tool.Route{"/svc/%41pi", "GET"}, `segment "%41pi": %41 is "A", which needs no escape: write "A"`},
		{"needless escape of a dash", tool.Route{"/svc/a%2Db", "GET"}, `%2D is "-", which needs no escape`},
		// A literal is held to what Bind refuses in a value.
		{"escaped slash literal", tool.Route{"/svc/a%2Fb", "GET"}, `segment "a%2Fb": value "a/b" holds '/'`},
		{"escaped NUL literal", tool.Route{"/svc/a%00", "GET"}, `segment "a%00": value "a\x00" holds a control character`},
		{"double-escaped dot-dot literal", tool.Route{"/svc/%252E%252E", "GET"}, `would climb a path segment`},
		{"dot-dot with a parameter", tool.Route{"/svc/..;x/y", "GET"}, `URI must not contain a ".." segment ("..;x"`},
		{"dot with a parameter", tool.Route{"/svc/.;x", "GET"}, `URI must not contain a "." segment`},
		{"sub-delims", tool.Route{"/svc/a:b;c=d,e@f!$&'()*+", "POST"}, ""},
		{"HEAD", tool.Route{"/svc/x", "HEAD"}, ""},
		{"PUT", tool.Route{"/svc/x", "PUT"}, ""},
		{"PATCH", tool.Route{"/svc/x", "PATCH"}, ""},
		{"OPTIONS", tool.Route{"/svc/x", "OPTIONS"}, ""},
		{"CONNECT", tool.Route{"/svc/x", "CONNECT"}, ""},
		{"TRACE", tool.Route{"/svc/x", "TRACE"}, ""},

		// Methods.
		{"lowercase method", tool.Route{"/svc/x", "get"}, `method "get" is not an upper-case HTTP method`},
		{"mixed-case method", tool.Route{"/svc/x", "Post"}, `method "Post"`},
		{"unknown method", tool.Route{"/svc/x", "FETCH"}, `method "FETCH"`},
		{"empty method", tool.Route{"/svc/x", ""}, `method ""`},
		{"method with space", tool.Route{"/svc/x", "GET "}, `method "GET "`},

		// Leading slash.
		{"empty URI", tool.Route{"", "GET"}, `must start with "/"`},
		{"relative", tool.Route{"svc/x", "GET"}, `must start with "/"`},
		{"absolute URL", tool.Route{"http://h/svc", "GET"}, `must start with "/"`},

		// Dot segments.
		{"dot segment", tool.Route{"/svc/./x", "GET"}, `must not contain a "." segment`},
		{"dot-dot segment", tool.Route{"/svc/../x", "GET"}, `must not contain a ".." segment`},
		{"trailing dot-dot", tool.Route{"/svc/x/..", "GET"}, `".." segment`},
		{"leading dot-dot", tool.Route{"/../svc", "GET"}, `".." segment`},
		{"escaped dot-dot lower", tool.Route{"/svc/%2e%2e/x", "GET"}, `must not decode to ".."`},
		{"escaped dot-dot upper", tool.Route{"/svc/%2E%2E/x", "GET"}, `must not decode to ".."`},
		{"half-escaped dot-dot", tool.Route{"/svc/.%2e/x", "GET"}, `must not decode to ".."`},
		{"escaped dot", tool.Route{"/svc/%2E", "GET"}, `must not decode to "."`},

		// Query and fragment.
		{"query", tool.Route{"/svc/x?a=1", "GET"}, "query or fragment"},
		{"empty query", tool.Route{"/svc/x?", "GET"}, "query or fragment"},
		{"fragment", tool.Route{"/svc/x#frag", "GET"}, "query or fragment"},

		// White space and control characters.
		{"space", tool.Route{"/svc/a b", "GET"}, "white space or control characters"},
		{"tab", tool.Route{"/svc/a\tb", "GET"}, "white space or control"},
		{"newline", tool.Route{"/svc/x\n", "GET"}, "white space or control"},
		{"carriage return", tool.Route{"/svc/x\r/y", "GET"}, "white space or control"},
		{"NUL", tool.Route{"/svc/x\x00", "GET"}, "white space or control"},
		{"DEL", tool.Route{"/svc/x\x7f", "GET"}, "white space or control"},
		{"C1 control", tool.Route{"/svc/x\u0085", "GET"}, "white space or control"},
		{"no-break space", tool.Route{"/svc/a\u00a0b", "GET"}, "white space or control"},
		{"line separator", tool.Route{"/svc/a\u2028b", "GET"}, "white space or control"},
		{"em space", tool.Route{"/svc/a\u2003b", "GET"}, "white space or control"},
		{"ideographic space", tool.Route{"/svc/a\u3000b", "GET"}, "white space or control"},
		{"invalid UTF-8", tool.Route{"/svc/a\xffb", "GET"}, "UTF-8"},

		// Empty segments.
		{"root only", tool.Route{"/", "GET"}, "empty segment"},
		{"trailing slash", tool.Route{"/svc/x/", "GET"}, ""},
		{"a service's root", tool.Route{"/svc/", "GET"}, ""},
		{"trailing slash after a placeholder", tool.Route{"/svc/{id}/", "GET"}, ""},
		{"two trailing slashes", tool.Route{"/svc/x//", "GET"}, "empty segment"},
		{"double slash", tool.Route{"/svc//x", "GET"}, "empty segment"},
		{"leading double slash", tool.Route{"//svc/x", "GET"}, "empty segment"},

		// Placeholders.
		{"empty placeholder", tool.Route{"/svc/{}", "GET"}, "name must be an identifier"},
		{"placeholder with dash", tool.Route{"/svc/{item-id}", "GET"}, "name must be an identifier"},
		{"placeholder with digit first", tool.Route{"/svc/{1id}", "GET"}, "name must be an identifier"},
		{"placeholder with space", tool.Route{"/svc/{a b}", "GET"}, "white space"},
		{"nested braces", tool.Route{"/svc/{{id}}", "GET"}, "name must be an identifier"},
		{"two in one segment", tool.Route{"/svc/{a}{b}", "GET"}, "name must be an identifier"},
		{"unclosed", tool.Route{"/svc/{id", "GET"}, "must be a whole segment"},
		{"unopened", tool.Route{"/svc/id}", "GET"}, "must be a whole segment"},
		{"prefix before placeholder", tool.Route{"/svc/item-{id}", "GET"}, "must be a whole segment"},
		{"suffix after placeholder", tool.Route{"/svc/{id}.json", "GET"}, "must be a whole segment"},
		{"wildcard style", tool.Route{"/svc/{path...}", "GET"}, "name must be an identifier"},
		{"duplicate placeholder", tool.Route{"/svc/{id}/x/{id}", "GET"}, "placeholder {id} appears twice"},

		// Literals in escaped form.
		{"unicode literal", tool.Route{"/svc/café", "GET"}, `percent-encode 'é' (at offset 8) as %C3%A9`},
		{"emoji literal", tool.Route{"/svc/x🙂", "GET"}, "URI must be in escaped form"},
		{"quote", tool.Route{"/svc/a\"b", "GET"}, `percent-encode '"' (at offset 6) as %22`},
		{"angle brackets", tool.Route{"/svc/<a>", "GET"}, "percent-encode '<'"},
		{"backslash", tool.Route{`/svc/..\x`, "GET"}, `percent-encode '\\'`},
		{"pipe", tool.Route{"/svc/a|b", "GET"}, "percent-encode '|'"},
		{"square brackets", tool.Route{"/svc/[a]", "GET"}, "percent-encode '['"},
		{"caret", tool.Route{"/svc/a^b", "GET"}, "percent-encode '^'"},
		{"backtick", tool.Route{"/svc/a`b", "GET"}, "percent-encode '`'"},

		// Percent-escapes.
		{"bad escape", tool.Route{"/svc/100%", "GET"}, "malformed percent-escape"},
		{"bad escape digits", tool.Route{"/svc/%zz", "GET"}, "malformed percent-escape"},
		{"short escape", tool.Route{"/svc/%2", "GET"}, "malformed percent-escape"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.route.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want nil", tt.route, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%q) = nil, want an error containing %q", tt.route, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Validate(%q) = %q, want it to contain %q", tt.route, err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "route ") {
				t.Errorf("Validate(%q) = %q, want it to name the route", tt.route, err)
			}
		})
	}
}

func TestPlaceholders(t *testing.T) {
	tests := []struct {
		uri  string
		want []string
	}{
		{"/svc/x", nil},
		{"/svc/{id}", []string{"id"}},
		{"/svc/{a}/x/{b}/{c}", []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		got := tool.Route{URI: tt.uri, Method: "GET"}.Placeholders()
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Placeholders(%q) mismatch (-want +got):\n%s", tt.uri, diff)
		}
	}
}

func TestBind(t *testing.T) {
	items := tool.Route{URI: "/catalog/api/v1/items/{id}", Method: "GET"}
	two := tool.Route{URI: "/catalog/{shop}/items/{id}", Method: "PUT"}
	tests := []struct {
		name    string
		route   tool.Route
		values  map[string]string
		want    string // bound URI; "" if an error is wanted
		wantErr string
	}{
		{"plain", items, map[string]string{"id": "42"}, "/catalog/api/v1/items/42", ""},
		{"no placeholders, nil values", tool.Route{URI: "/catalog/items", Method: "GET"}, nil, "/catalog/items", ""},
		{"no placeholders, empty values", tool.Route{URI: "/catalog/items", Method: "GET"}, map[string]string{}, "/catalog/items", ""},
		{"two", two, map[string]string{"shop": "s1", "id": "i1"}, "/catalog/s1/items/i1", ""},
		{"percent escaped", items, map[string]string{"id": "100%"}, "/catalog/api/v1/items/100%25", ""},
		{"percent-encoded text", items, map[string]string{"id": "50%25 off"}, "/catalog/api/v1/items/50%2525%20off", ""},
		{"space escaped", items, map[string]string{"id": "a b"}, "/catalog/api/v1/items/a%20b", ""},
		{"question mark escaped", items, map[string]string{"id": "a?x=1"}, "/catalog/api/v1/items/a%3Fx=1", ""},
		{"hash escaped", items, map[string]string{"id": "a#b"}, "/catalog/api/v1/items/a%23b", ""},
		{"semicolon escaped", items, map[string]string{"id": "a;b"}, "/catalog/api/v1/items/a%3Bb", ""},
		{"unicode escaped", items, map[string]string{"id": "café"}, "/catalog/api/v1/items/caf%C3%A9", ""},
		{"dots inside value", items, map[string]string{"id": "v1.2"}, "/catalog/api/v1/items/v1.2", ""},
		{"three dots", items, map[string]string{"id": "..."}, "/catalog/api/v1/items/...", ""},
		{"leading dot", items, map[string]string{"id": ".env"}, "/catalog/api/v1/items/.env", ""},

		{"empty value", items, map[string]string{"id": ""}, "", "{id}: empty value"},
		{"dot", items, map[string]string{"id": "."}, "", `value "." would climb a path segment`},
		{"dot-dot", items, map[string]string{"id": ".."}, "", `value ".." would climb a path segment`},
		{"newline", items, map[string]string{"id": "a\nb"}, "", "control character"},
		{"NUL", items, map[string]string{"id": "a\x00"}, "", "control character"},
		{"DEL", items, map[string]string{"id": "\x7f"}, "", "control character"},
		{"C1", items, map[string]string{"id": "\u009b"}, "", "control character"},
		// Escaped, a separator would still be one for an upstream that
		// decodes %2F (or takes "\\" for "/") before routing.
		{"slash", items, map[string]string{"id": "a/b"}, "", `value "a/b" holds '/'`},
		{"climbing slashes", items, map[string]string{"id": "../../admin"}, "", `holds '/'`},
		{"lone slash", items, map[string]string{"id": "/"}, "", `holds '/'`},
		{"backslash", items, map[string]string{"id": `..\..`}, "", `holds '\\'`},
		// What a value becomes once decoded counts too: proxies and
		// frameworks decode, some more than once.
		{"escaped dot-dot", items, map[string]string{"id": "%2e%2e"}, "", `value "%2e%2e" would climb a path segment once decoded ("..")`},
		{"escaped slashes", items, map[string]string{"id": "..%2F..%2Fadmin"}, "", `holds '/' once decoded`},
		{"double-escaped slashes", items, map[string]string{"id": "..%252F..%252Fadmin"}, "", `holds '/' once decoded twice ("../../admin")`},
		{"escaped backslash", items, map[string]string{"id": "a%5cb"}, "", `holds '\\' once decoded`},
		{"escaped control", items, map[string]string{"id": "a%00"}, "", "control character once decoded"},
		{"encoded four times", items, map[string]string{"id": "%2525252e"}, "", "encoded more than 3 times"},
		{"overlong slash", items, map[string]string{"id": "..%c0%af"}, "", `value "..%c0%af" is not valid UTF-8 once decoded`},
		{"overlong slash, encoded twice", items, map[string]string{"id": "%25c0%25af"}, "", `value "%25c0%25af" is not valid UTF-8`},
		// "..;x" is ".." to Tomcat, Jetty and Spring.
		{"dot-dot with a parameter", items, map[string]string{"id": "..;x"}, "", `value "..;x" would climb a path segment`},
		{"dot with a parameter", items, map[string]string{"id": ".;"}, "", "would climb"},
		// Characters that Unicode normalization turns into dots and
		// slashes: the rule comes from Unicode's data
		// (TestBindEveryCodePoint), these are examples.
		{"fullwidth dots and slashes", items, map[string]string{"id": "．．／．．／admin"}, "", `holds '/' once NFKC-normalized ("../../admin")`},
		{"two dot leader", items, map[string]string{"id": "‥"}, "", `would climb a path segment once NFKC-normalized ("..")`},
		{"vertical two dot leader", items, map[string]string{"id": "\uFE30"}, "", `would climb a path segment once NFKC-normalized ("..")`},
		{"dot and one dot leader", items, map[string]string{"id": ".\u2024"}, "", `would climb a path segment once NFKC-normalized ("..")`},
		{"account of", items, map[string]string{"id": "\u2100"}, "", `holds '/' once NFKC-normalized ("a/c")`},
		{"addressed to the subject", items, map[string]string{"id": "\u2101"}, "", `holds '/' once NFKC-normalized ("a/s")`},
		{"care of", items, map[string]string{"id": "\u2105"}, "", `holds '/' once NFKC-normalized ("c/o")`},
		{"cada una", items, map[string]string{"id": "\u2106"}, "", `holds '/' once NFKC-normalized ("c/u")`},
		{"fullwidth backslash", items, map[string]string{"id": "a＼b"}, "", `holds '\\' once NFKC-normalized ("a\\b")`},
		{"fullwidth percent-escape", items, map[string]string{"id": "..％２Ｆadmin"}, "", `holds '/' once NFKC-normalized and decoded ("../admin")`},
		{"greek question mark", items, map[string]string{"id": "..\u037Ex"}, "", `would climb a path segment once NFKC-normalized ("..;x")`},
		{"escaped two dot leader", items, map[string]string{"id": "%E2%80%A5"}, "", `would climb a path segment once decoded and NFKC-normalized ("..")`},
		// Not normalization: Windows' best-fit mapping to code pages.
		{"division slash", items, map[string]string{"id": "..∕admin"}, "", `holds '∕', which Windows' best-fit conversion turns into "/"`},
		{"vulgar fraction", items, map[string]string{"id": "¼"}, "", `holds '⁄' once NFKC-normalized ("1⁄4"), which Windows' best-fit`},
		{"missing", items, map[string]string{}, "", "no value for {id}"},
		{"missing nil map", items, nil, "", "no value for {id}"},
		{"one of two missing", two, map[string]string{"id": "1"}, "", "no value for {shop}"},
		{"unknown name", items, map[string]string{"id": "1", "other": "2"}, "", "unknown placeholder {other}"},
		{"unknown name only", tool.Route{URI: "/catalog/items", Method: "GET"}, map[string]string{"id": "1"}, "", "unknown placeholder {id}"},
		{"unknown name spelling a template fragment", two, map[string]string{"shop": "s", "id": "i", "shop}/items/{id": "x"}, "", "unknown placeholder"},
		{"invalid template", tool.Route{URI: "/catalog/../{id}", Method: "GET"}, map[string]string{"id": "1"}, "", `".." segment`},
		{"invalid method", tool.Route{URI: "/catalog/{id}", Method: "get"}, map[string]string{"id": "1"}, "", `method "get"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.route.Bind(tt.values)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Bind = %v, want an error containing %q", got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("Bind error = %q, want it to contain %q", err, tt.wantErr)
				}
				if got != (tool.Route{}) {
					t.Errorf("Bind returned %v with its error, want the zero Route", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Bind: %v", err)
			}
			want := tool.Route{URI: tt.want, Method: tt.route.Method}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Bind mismatch (-want +got):\n%s", diff)
			}
			// The bound URI is the escaped path of a URL whose segments
			// are the values: net/url agrees on the escaping.
			u, err := url.Parse(got.URI)
			if err != nil {
				t.Fatalf("url.Parse(%q): %v", got.URI, err)
			}
			if u.EscapedPath() != got.URI {
				t.Errorf("EscapedPath() = %q, want %q", u.EscapedPath(), got.URI)
			}
			if n, m := strings.Count(got.URI, "/"), strings.Count(tt.route.URI, "/"); n != m {
				t.Errorf("bound URI has %d segments, template %d", n, m)
			}
			if !tt.route.Match(got.Method, got.URI) {
				t.Errorf("%v does not Match its own binding %q", tt.route, got.URI)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	items := tool.Route{URI: "/catalog/api/v1/items/{id}", Method: "GET"}
	two := tool.Route{URI: "/catalog/{shop}/items/{id}", Method: "PUT"}
	literal := tool.Route{URI: "/catalog/api/v1/items", Method: "POST"}
	slashed := tool.Route{URI: "/catalog/api/v1/items/{id}/", Method: "GET"}
	root := tool.Route{URI: "/catalog/", Method: "GET"}
	tests := []struct {
		name   string
		route  tool.Route
		method string
		path   string
		want   bool
	}{
		{"plain", items, "GET", "/catalog/api/v1/items/42", true},
		{"literal", literal, "POST", "/catalog/api/v1/items", true},
		{"two placeholders", two, "PUT", "/catalog/s1/items/i1", true},
		{"escaped percent", items, "GET", "/catalog/api/v1/items/100%25", true},
		{"escaped percent sign", items, "GET", "/catalog/api/v1/items/50%2525", true},
		{"semicolon inside a segment", items, "GET", "/catalog/api/v1/items/a;b", true},
		{"dots inside segment", items, "GET", "/catalog/api/v1/items/a..b", true},
		{"three dots", items, "GET", "/catalog/api/v1/items/...", true},
		{"unicode escaped", items, "GET", "/catalog/api/v1/items/caf%C3%A9", true},

		{"method mismatch", items, "POST", "/catalog/api/v1/items/42", false},
		{"lowercase method", items, "get", "/catalog/api/v1/items/42", false},
		{"empty method", items, "", "/catalog/api/v1/items/42", false},
		{"raw slash adds a segment", items, "GET", "/catalog/api/v1/items/a/b", false},
		{"escaped slash", items, "GET", "/catalog/api/v1/items/a%2Fb", false},
		{"escaped slash, lower case", items, "GET", "/catalog/api/v1/items/a%2fb", false},
		{"escaped climbing slashes", items, "GET", "/catalog/api/v1/items/..%2F..%2Fadmin", false},
		{"escaped backslash", items, "GET", "/catalog/api/v1/items/..%5C..", false},
		{"double-escaped dot-dot", items, "GET", "/catalog/api/v1/items/%252e%252e", false},
		{"double-escaped slashes", items, "GET", "/catalog/api/v1/items/..%252F..%252Fadmin", false},
		{"dot-dot with a parameter", items, "GET", "/catalog/api/v1/items/..;", false},
		{"dot-dot with a named parameter", items, "GET", "/catalog/api/v1/items/..;jsessionid=x", false},
		{"escaped dot-dot with a parameter", items, "GET", "/catalog/api/v1/items/.%2e;", false},
		{"escaped NUL", items, "GET", "/catalog/api/v1/items/%00", false},
		{"escaped CR LF", items, "GET", "/catalog/api/v1/items/%0D%0A", false},
		{"fullwidth dots", items, "GET", "/catalog/api/v1/items/%EF%BC%8E%EF%BC%8E", false},
		{"raw backslash", items, "GET", `/catalog/api/v1/items/..\..`, false},
		{"extra segment", items, "GET", "/catalog/api/v1/items/42/delete", false},
		{"missing segment", items, "GET", "/catalog/api/v1/items", false},
		{"missing segment, trailing slash", items, "GET", "/catalog/api/v1/items/", false},
		{"trailing slash", items, "GET", "/catalog/api/v1/items/42/", false},
		{"literal with trailing slash", literal, "POST", "/catalog/api/v1/items/", false},
		{"trailing slash template", slashed, "GET", "/catalog/api/v1/items/42/", true},
		{"trailing slash template, no slash", slashed, "GET", "/catalog/api/v1/items/42", false},
		{"trailing slash template, empty placeholder", slashed, "GET", "/catalog/api/v1/items//", false},
		{"trailing slash template, two slashes", slashed, "GET", "/catalog/api/v1/items/42//", false},
		{"trailing slash template, a segment more", slashed, "GET", "/catalog/api/v1/items/42/x", false},
		{"trailing slash template, dot-dot", slashed, "GET", "/catalog/api/v1/items/../", false},
		{"service root", root, "GET", "/catalog/", true},
		{"service root, no slash", root, "GET", "/catalog", false},
		{"service root, a segment more", root, "GET", "/catalog/x", false},
		{"service root, two slashes", root, "GET", "/catalog//", false},
		{"double slash", items, "GET", "/catalog/api/v1//items/42", false},
		{"empty placeholder in middle", two, "PUT", "/catalog//items/i1", false},
		{"dot placeholder", items, "GET", "/catalog/api/v1/items/.", false},
		{"dot-dot placeholder", items, "GET", "/catalog/api/v1/items/..", false},
		{"escaped dot-dot placeholder upper", items, "GET", "/catalog/api/v1/items/%2E%2E", false},
		{"escaped dot-dot placeholder lower", items, "GET", "/catalog/api/v1/items/%2e%2e", false},
		{"half-escaped dot-dot", items, "GET", "/catalog/api/v1/items/.%2E", false},
		{"escaped dot placeholder", items, "GET", "/catalog/api/v1/items/%2e", false},
		{"dot-dot climbing out of a literal", two, "PUT", "/catalog/s1/items/../items/i1", false},
		{"dot-dot as first placeholder", two, "PUT", "/catalog/../items/i1", false},
		{"malformed escape in placeholder", items, "GET", "/catalog/api/v1/items/%zz", false},
		{"truncated escape in placeholder", items, "GET", "/catalog/api/v1/items/a%2", false},
		{"literal differs", items, "GET", "/catalog/api/v2/items/42", false},
		{"literal differs in case", items, "GET", "/Catalog/api/v1/items/42", false},
		{"other service", items, "GET", "/billing/api/v1/items/42", false},
		{"no leading slash", items, "GET", "catalog/api/v1/items/42", false},
		{"empty path", items, "GET", "", false},
		{"root path", items, "GET", "/", false},
		{"prefix only", items, "GET", "/catalog", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.route.Match(tt.method, tt.path); got != tt.want {
				t.Errorf("%v.Match(%q, %q) = %v, want %v", tt.route, tt.method, tt.path, got, tt.want)
			}
		})
	}
}

// TestMatchInvalidTemplate checks that a template Validate refuses
// matches nothing, not even its own text.
func TestMatchInvalidTemplate(t *testing.T) {
	tests := []tool.Route{
		{URI: "/svc/../admin", Method: "GET"},
		{URI: "/svc/./x", Method: "GET"},
		{URI: "/svc/%2e%2e/x", Method: "GET"},
		{URI: "/svc/x//", Method: "GET"},
		{URI: "/svc//x", Method: "GET"},
		{URI: "/svc/x?y", Method: "GET"},
		{URI: "/svc/a b", Method: "GET"},
		{URI: "/svc/100%", Method: "GET"},
		{URI: "/svc/{id}/{id}", Method: "GET"},
		{URI: "/svc/{}", Method: "GET"},
		{URI: "/svc/x", Method: "get"},
		{URI: "", Method: "GET"},
		{URI: "svc/x", Method: "GET"},
	}
	for _, r := range tests {
		if r.Validate() == nil {
			t.Fatalf("Validate(%v) = nil; the test wants invalid routes", r)
		}
		if r.Match(r.Method, r.URI) {
			t.Errorf("invalid %v matches its own URI", r)
		}
		if r.Match(r.Method, strings.ReplaceAll(r.URI, "{id}", "1")) {
			t.Errorf("invalid %v matches a filled URI", r)
		}
	}
	// Positive controls: valid routes of the same shapes match.
	for _, c := range []struct {
		r    tool.Route
		path string
	}{
		{tool.Route{URI: "/svc/admin", Method: "GET"}, "/svc/admin"},
		{tool.Route{URI: "/svc/{id}/{id2}", Method: "GET"}, "/svc/1/2"},
		{tool.Route{URI: "/svc/{id}", Method: "GET"}, "/svc/1"},
	} {
		if !c.r.Match(c.r.Method, c.path) {
			t.Errorf("valid %v does not match %q", c.r, c.path)
		}
	}
}

// TestBindMatch is the property that ties the two together: every
// successful Bind matches its template, for many templates and values.
func TestBindMatch(t *testing.T) {
	templates := []tool.Route{
		{URI: "/svc/{a}", Method: "GET"},
		{URI: "/svc/x/{a}/y/{b}", Method: "POST"},
		{URI: "/{a}/{b}/{c}", Method: "DELETE"},
		{URI: "/svc/caf%C3%A9/{a}", Method: "PATCH"},
		{URI: "/svc/a%20b/{a}", Method: "PUT"},
	}
	values := []string{
		"1", "%", "100%", "50%25", "a b", "é", "日本", "?", "#", ";", "a;b", "+", "~",
		"...", ".a", "a.", "\ufffd", "{a}", "}", "'\"<>", "a\u2028b",
	}
	// Separators are refused, escaped or not.
	refused := []string{"a/b", "/", "//", "../..", "\\", `a\b`, "%2e%2e", "%2F", "%5C", "..;", "．", "a%252Fb", "..%c0%af", "\xff"}
	for _, tmpl := range templates {
		for _, v := range values {
			m := map[string]string{}
			for _, name := range tmpl.Placeholders() {
				m[name] = v
			}
			b, err := tmpl.Bind(m)
			if err != nil {
				t.Errorf("%v.Bind(%q): %v", tmpl, v, err)
				continue
			}
			if !tmpl.Match(b.Method, b.URI) {
				t.Errorf("%v does not match its binding %q (value %q)", tmpl, b.URI, v)
			}
			checkBound(t, tmpl, b)
		}
		for _, v := range refused {
			m := map[string]string{}
			for _, name := range tmpl.Placeholders() {
				m[name] = v
			}
			if b, err := tmpl.Bind(m); err == nil {
				t.Errorf("%v.Bind(%q) = %v, want it refused", tmpl, v, b)
			}
		}
	}
}

// checkBound checks the safety properties of a bound route b of tmpl:
// as many segments as the template, and no segment that is, or decodes
// to, "." or "..".
func checkBound(t testing.TB, tmpl, b tool.Route) {
	t.Helper()
	if b.Method != tmpl.Method {
		t.Errorf("bound method %q, template %q", b.Method, tmpl.Method)
	}
	if got, want := strings.Count(b.URI, "/"), strings.Count(tmpl.URI, "/"); got != want {
		t.Errorf("bound %q has %d segments, template %q has %d", b.URI, got, tmpl.URI, want)
	}
	// A request made from the bound URI shows it unchanged as its escaped
	// path, which the template matches.
	u, err := url.Parse(b.URI)
	if err != nil {
		t.Errorf("url.Parse(%q): %v", b.URI, err)
	} else if u.EscapedPath() != b.URI || !tmpl.Match(b.Method, u.EscapedPath()) {
		t.Errorf("bound %q has the escaped path %q, matched: %v", b.URI, u.EscapedPath(), tmpl.Match(b.Method, u.EscapedPath()))
	}
	tsegs := strings.Split(tmpl.URI, "/")
	for i, seg := range strings.Split(b.URI, "/")[1:] {
		u, err := url.PathUnescape(seg)
		if err != nil {
			t.Errorf("bound %q: segment %q does not unescape: %v", b.URI, seg, err)
		}
		if trailing := i+2 == len(tsegs) && tsegs[i+1] == ""; (seg == "" || u == "") && !trailing || seg == "." || seg == ".." || u == "." || u == ".." {
			t.Errorf("bound %q has a segment %q (decoded %q)", b.URI, seg, u)
		}
		if i+1 < len(tsegs) && tsegs[i+1] != seg && strings.ContainsAny(u, "/\\") {
			t.Errorf("bound %q has a placeholder segment %q that decodes to a separator", b.URI, seg)
		}
	}
}

func BenchmarkMatch(b *testing.B) {
	r := tool.Route{URI: "/catalog/api/v1/shops/{shop}/items/{id}", Method: "GET"}
	path := "/catalog/api/v1/shops/s-1/items/caf%C3%A9"
	b.ReportAllocs()
	for b.Loop() {
		if !r.Match("GET", path) {
			b.Fatal("no match")
		}
	}
}

func BenchmarkBind(b *testing.B) {
	r := tool.Route{URI: "/catalog/api/v1/shops/{shop}/items/{id}", Method: "GET"}
	values := map[string]string{"shop": "s-1", "id": "café 42"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Bind(values); err != nil {
			b.Fatal(err)
		}
	}
}
