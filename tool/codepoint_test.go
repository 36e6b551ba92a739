package tool_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/toolroute/toolroute/tool"
)

// TestBindEveryCodePoint checks Bind's rule as a property of every
// Unicode code point, not of a list of look-alikes. For every valid rune
// r, the rule ([tool.SegmentProblem], what Bind and Match apply to a
// value) refuses r iff [safeValue] does. Where Unicode gives r a
// decomposition (the only way for r to become ASCII), and for ASCII, it
// checks Bind itself, on r alone and next to the ASCII r could complete
// ("." + r becoming "..", "%" + r + "F" becoming "%2F", ...):
//   - Bind refuses the value iff safeValue does;
//   - an accepted value's bound segment, as the upstream receives it,
//     can become no "/", "\\", dot segment, control character nor
//     best-fit slash, whatever the hops decode (up to four times: the
//     escape Bind adds and three more) or normalize, in any order;
//   - the bound route matches its template.
//
// The code points are split in parallel chunks, to keep go test -race
// within seconds.
func TestBindEveryCodePoint(t *testing.T) {
	const chunks = 4
	for i := range rune(chunks) {
		t.Run(fmt.Sprintf("%d_mod_%d", i, chunks), func(t *testing.T) {
			t.Parallel()
			bindCodePoints(t, i, chunks)
		})
	}
}

// bindCodePoints checks the code points first, first+step, ...
func bindCodePoints(t *testing.T, first, step rune) {
	items := tool.Route{URI: "/svc/items/{id}", Method: "GET"}
	values := map[string]string{"id": ""}
	bind := func(v string) {
		values["id"] = v
		b, err := items.Bind(values)
		if err != nil {
			if safeValue(v) {
				t.Errorf("Bind(%q) (%U): %v; the rule says it is safe", v, []rune(v), err)
			}
			return
		}
		// Decoded once, the segment is v: this explores v's transforms
		// too, and so checks safeValue(v).
		seg := strings.TrimPrefix(b.URI, "/svc/items/")
		if !transforms(seg, 4, safeText) {
			t.Errorf("Bind(%q) (%U) = %q: an upstream can read a separator, a dot segment or a control character in it", v, []rune(v), b.URI)
		}
		if !items.Match(b.Method, b.URI) {
			t.Errorf("Bind(%q) = %q does not match %v", v, b.URI, items)
		}
	}
	var buf [utf8.UTFMax]byte
	for r := first; r <= utf8.MaxRune; r += step {
		if !utf8.ValidRune(r) {
			continue
		}
		s := string(buf[:utf8.EncodeRune(buf[:], r)])
		if r >= utf8.RuneSelf {
			d := norm.NFKD.PropertiesString(s).Decomposition()
			switch {
			case d == nil:
				// Every normal form of r alone is r: the rule must
				// judge r as it is.
				if err := tool.SegmentProblem(s); (err == nil) != safeText(s) {
					t.Errorf("%U: the rule says %v; want safe = %v", r, err, safeText(s))
				}
				continue
			case isASCIIFree(d):
				// r decomposes into non-ASCII only (Hangul syllables,
				// accented letters): no neighbour can complete it.
				if err := tool.SegmentProblem(s); (err == nil) != safeValue(s) {
					t.Errorf("%U: the rule says %v; want safe = %v", r, err, safeValue(s))
				}
				continue
			}
		}
		bind(s)
		for _, v := range [...]string{"." + s, s + ".", ".." + s + "x", "%" + s + "F", "%2" + s, s + "2F", "a" + s + "b"} {
			bind(v)
		}
	}
}

func TestBindLookAlikes(t *testing.T) {
	items := tool.Route{URI: "/svc/items/{id}", Method: "GET"}
	values := map[string]string{"id": ""}
	// The code points that slipped through a hand-written list.
	for _, r := range []rune{'\uFE30', '\u2100', '\u2101', '\u2105', '\u2106', '\u2025', '\uFF0F', '\uFF3C'} {
		values["id"] = string(r)
		if _, err := items.Bind(values); err == nil {
			t.Errorf("Bind(%q) (%U) succeeded", string(r), r)
		}
		if items.Match("GET", "/svc/items/"+url.PathEscape(string(r))) {
			t.Errorf("Match of %U succeeded", r)
		}
	}
}

// isASCIIFree reports whether b holds no ASCII byte.
func isASCIIFree(b []byte) bool {
	for _, c := range b {
		if c < utf8.RuneSelf {
			return false
		}
	}
	return true
}
