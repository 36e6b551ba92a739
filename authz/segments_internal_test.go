package authz

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTemplates pins which path regexps take the trie (no regexp run) and
// what they expand to. FuzzPolicyMatcher checks the trie agrees with the
// regexps.
func TestTemplates(t *testing.T) {
	lit := func(s string) segPart { return segPart{lit: s} }
	wild := segPart{wild: true}
	tests := []struct {
		pattern string
		want    [][]segPart // nil: not a template
	}{
		{`^/catalog/api/v1/items/[^/]+$`, [][]segPart{{lit(""), lit("catalog"), lit("api"), lit("v1"), lit("items"), wild}}},
		{`^/catalog/items(/[^/]+)?$`, [][]segPart{
			{lit(""), lit("catalog"), lit("items")},
			{lit(""), lit("catalog"), lit("items"), wild},
		}},
		{`^/(items|products)$`, [][]segPart{{lit(""), lit("items")}, {lit(""), lit("products")}}},
		{`^/a/[^/]+/b$|^/c$`, [][]segPart{{lit(""), lit("a"), wild, lit("b")}, {lit(""), lit("c")}}},
		{`\A/v1\.2/a\+b\z`, [][]segPart{{lit(""), lit("v1.2"), lit("a+b")}}},
		{`^/$`, [][]segPart{{lit(""), lit("")}}},
		{`^[^/]+/x$`, [][]segPart{{wild, lit("x")}}},
		// Not templates: they run as regexps.
		{`/catalog/items`, nil},  // unanchored
		{`^/catalog/items`, nil}, // open end
		{`^/a/[^/]+x$`, nil},     // wildcard inside a segment
		{`^/a/x[^/]+$`, nil},     // wildcard inside a segment
		{`^/a/[^/]*$`, nil},      // may be empty
		{`^/a/[^/]+[^/]+$`, nil}, // two wildcards, one segment
		{`(?i)^/a$`, nil},        // case folding
		{`^/a/.+$`, nil},         // crosses segments
		{`^/a/[a-z]+$`, nil},     // other class
		{`^/(a|b)$`, nil},        // parsed as the class [ab]
		{`(?m)^/a$`, nil},        // line anchors
		{`^/\x{FFFD}$`, nil},     // matches invalid bytes too
		{`^/a(/[^/]+)?(/[^/]+)?(/[^/]+)?(/[^/]+)?(/[^/]+)?$`, nil}, // 32 variants
	}
	for _, tt := range tests {
		got, ok := templates(tt.pattern)
		if ok != (tt.want != nil) {
			t.Errorf("%s: template = %v, want %v", tt.pattern, ok, tt.want != nil)
			continue
		}
		if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(segPart{})); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.pattern, diff)
		}
	}
}
