package tool_test

import (
	"net/url"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/toolroute/toolroute/tool"
)

// safeValue is an independent statement of what Bind accepts: a value
// that is not empty and none of whose transforms (see [transforms]: up
// to three percent-decodings and any Unicode normalizations, in any
// order; a fourth decoding must change nothing) is "." or ".." (also
// before a ";"), or holds "/", "\\", a control character or a character
// that Windows' best-fit mapping turns into "/".
func safeValue(v string) bool {
	return v != "" && transforms(v, 3, safeText)
}

// safeText reports whether s is valid UTF-8, no dot segment (also before
// a ";") and holds no "/", "\\", control character or best-fit slash.
func safeText(s string) bool {
	head, _, _ := strings.Cut(s, ";")
	return utf8.ValidString(s) && head != "." && head != ".." && !strings.ContainsAny(s, "/\\∕⁄⧸") && !strings.ContainsFunc(s, unicode.IsControl)
}

// transforms calls ok on every text v can become by percent-decoding it
// at most decodes times and normalizing it to NFC, NFD, NFKC or NFKD,
// in any order and as often as that changes something, until ok returns
// false. It returns false if ok did, or if a text decoded decodes times
// still changes when decoded again.
func transforms(v string, decodes int, ok func(string) bool) bool {
	type text struct {
		s       string
		decoded int
	}
	forms := [...]norm.Form{norm.NFC, norm.NFD, norm.NFKC, norm.NFKD}
	seen := []text{{v, 0}}
	for i := 0; i < len(seen); i++ {
		t := seen[i]
		if !ok(t.s) {
			return false
		}
		var buf [len(forms) + 1]text
		next := buf[:0]
		for _, f := range forms {
			next = append(next, text{f.String(t.s), t.decoded})
		}
		if d, err := url.PathUnescape(t.s); err == nil && d != t.s {
			if t.decoded == decodes {
				return false
			}
			next = append(next, text{d, t.decoded + 1})
		}
		for _, n := range next {
			if !slices.Contains(seen, n) {
				seen = append(seen, n)
			}
		}
	}
	return true
}

// FuzzBind checks that a bound route never has more segments than its
// template, never holds a segment that is or decodes to "." or "..", and
// always matches its template; and that Bind refuses exactly the invalid
// templates and unsafe values.
func FuzzBind(f *testing.F) {
	for _, s := range [][3]string{
		{"/svc/items/{id}", "42", ""},
		{"/svc/{a}/x/{b}", "a/b", "../.."},
		{"/svc/{a}/x/{b}", "%2e%2e", "%2F"},
		{"/svc/{a}", ".", ""},
		{"/svc/{a}", "..", ""},
		{"/svc/{a}", "", ""},
		{"/svc/{a}", "a\nb", ""},
		{"/svc/{a}", "café 日本", ""},
		{"/svc/{a}", "\xff\xfe", ""},
		{"/svc/{a}", "?x=1#f", ""},
		{"/svc/../{a}", "1", ""},
		{"/svc/%2e%2e/{a}", "1", ""},
		{"/svc/{a}/{a}", "1", "2"},
		{"/svc/{a}/", "1", ""},
		{"/{a}/{b}", "/", "//"},
		{"/svc/a%2Fb/{a}", "x", ""},
		{"/svc/{a}", "\u0085", ""},
		{"/svc/{a}", `..\..`, ""},
		{"/svc/{a}", "\uFE30", "\u2100"},
		{"/svc/{a}", "..％２Ｆx", "%E2%80%A5"},
	} {
		f.Add(s[0], s[1], s[2])
	}
	f.Fuzz(func(t *testing.T, uri, v1, v2 string) {
		tmpl := tool.Route{URI: uri, Method: "GET"}
		values := map[string]string{}
		names := tmpl.Placeholders()
		for i, name := range names {
			switch i {
			case 0:
				values[name] = v1
			case 1:
				values[name] = v2
			default:
				values[name] = "x"
			}
		}
		b, err := tmpl.Bind(values)
		valid := tmpl.Validate() == nil
		if err != nil {
			if valid && safeValue(v1) && (len(names) < 2 || safeValue(v2)) {
				t.Fatalf("%v.Bind(%q) of a valid template and safe values: %v", tmpl, values, err)
			}
			return
		}
		if !valid {
			t.Fatalf("Bind of invalid template %v succeeded: %v", tmpl, b)
		}
		checkBound(t, tmpl, b)
		if !tmpl.Match(b.Method, b.URI) {
			t.Fatalf("%v does not match its binding %q (values %q)", tmpl, b.URI, values)
		}
		// The bound route decodes back to the values, segment by segment.
		segs := strings.Split(b.URI, "/")
		for i, seg := range strings.Split(uri, "/") {
			if name := strings.Trim(seg, "{}"); seg != name {
				got, err := url.PathUnescape(segs[i])
				if err != nil || got != values[name] {
					t.Fatalf("segment %d of %q decodes to %q, %v; want %q", i, b.URI, got, err, values[name])
				}
			}
		}
	})
}

// FuzzMatch checks that a matching path has as many segments as the
// template, no empty segment (but a last one where the template ends in
// "/"), none that is or decodes to "." or "..",
// the template's literal segments, and that binding the values it
// carries gives a route that matches too.
func FuzzMatch(f *testing.F) {
	for _, s := range [][2]string{
		{"/svc/items/{id}", "/svc/items/42"},
		{"/svc/items/{id}", "/svc/items/a%2Fb"},
		{"/svc/items/{id}", "/svc/items/a/b"},
		{"/svc/items/{id}", "/svc/items/a%5Cb"},
		{"/svc/items/{id}", "/svc/items/a%2fb"},
		{"/svc/items/{id}", "/svc/items/a\\b"},
		{"/svc/items/{id}", "/svc/items/.."},
		{"/svc/items/{id}", "/svc/items/%2E%2E"},
		{"/svc/items/{id}", "/svc/items/%2e."},
		{"/svc/items/{id}", "/svc/items/"},
		{"/svc/items/{id}", "/svc/items/42/"},
		{"/svc/items/{id}", "/svc/items"},
		{"/svc/items/{id}", "/svc/items/%zz"},
		{"/svc/{a}/x/{b}", "/svc/1/x/2"},
		{"/svc/../x", "/svc/../x"},
		{"/svc/x", "/svc/x"},
		{"/svc/%41", "/svc/A"},
		{"/svc/{a}", "/svc/%C3%A9"},
		{"/svc/{a}", "//svc/a"},
		{"/svc/items/{id}", "/svc/items/%EF%B8%B0"},
		{"/svc/items/{id}/", "/svc/items/42/"},
		{"/svc/items/{id}/", "/svc/items//"},
		{"/svc/", "/svc/"},
		{"/svc/", "/svc//"},
		{"/svc/items/{id}", "/svc/items/%E2%84%80"},
		{"/svc/items/{id}", "/svc/items/..%EF%BC%85%EF%BC%92F"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, uri, path string) {
		tmpl := tool.Route{URI: uri, Method: "GET"}
		if tmpl.Match("POST", path) {
			t.Fatalf("%v matches POST %q", tmpl, path)
		}
		if !tmpl.Match("GET", path) {
			return
		}
		if err := tmpl.Validate(); err != nil {
			t.Fatalf("invalid %v matches %q: %v", tmpl, path, err)
		}
		tsegs, psegs := strings.Split(uri, "/"), strings.Split(path, "/")
		if len(tsegs) != len(psegs) || psegs[0] != "" {
			t.Fatalf("%v matches %q: segments %q vs %q", tmpl, path, tsegs, psegs)
		}
		values := map[string]string{}
		for i := 1; i < len(psegs); i++ {
			seg := psegs[i]
			u, err := url.PathUnescape(seg)
			// Only the last segment may be empty, where the template's is
			// (a trailing "/").
			trailing := i == len(psegs)-1 && tsegs[i] == ""
			if seg == "" && !trailing || seg == "." || seg == ".." || (err == nil && (u == "" && !trailing || u == "." || u == "..")) {
				t.Fatalf("%v matches %q, whose segment %q decodes to %q", tmpl, path, seg, u)
			}
			if name := strings.Trim(tsegs[i], "{}"); name != tsegs[i] {
				if err != nil {
					t.Fatalf("%v matches %q, whose segment %q does not unescape: %v", tmpl, path, seg, err)
				}
				if !safeValue(u) {
					t.Fatalf("%v matches %q, whose placeholder segment %q holds %q, a value Bind refuses", tmpl, path, seg, u)
				}
				values[name] = u
			} else if tsegs[i] != seg {
				t.Fatalf("%v matches %q: literal %q vs %q", tmpl, path, tsegs[i], seg)
			}
		}
		b, err := tmpl.Bind(values)
		if err != nil {
			// Only control characters make a matched value unbindable:
			// Match takes any escaped segment, Bind refuses them.
			for _, v := range values {
				if !safeValue(v) {
					return
				}
			}
			t.Fatalf("%v matches %q but Bind(%q): %v", tmpl, path, values, err)
		}
		if !tmpl.Match(b.Method, b.URI) {
			t.Fatalf("%v matches %q but not its rebinding %q", tmpl, path, b.URI)
		}
	})
}
