package lint

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// TestShortestWitness holds the witness generator to concrete cases: a
// rule's regexp against a route template's concrete paths, with the
// shortest path both match, or none.
func TestShortestWitness(t *testing.T) {
	tests := []struct {
		rule, template string
		want           string // "" with res empty: no path of the template matches
		res            result
	}{
		// The rule of the brief: a concrete id of the template.
		{`^/catalog/api/v1/items/itm-[0-9]+$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/itm-0", found},
		// Rules that match the template too: a witness all the same (the
		// check asks only for rules that match no template).
		{`^/catalog/api/v1/items(/[^/]+)?$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		{`^/catalog/api/v1/items(/[^/]+)?$`, "/catalog/api/v1/items", "/catalog/api/v1/items", found},
		{`^/catalog/api/v1/items/[^/]+$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		// Alternation: the branch that fits.
		{`^/catalog/api/v1/(orders/o-[0-9]+|items/[A-Z]{3})$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/AAA", found},
		// Repeats: the count the template's segments need, not the least.
		{`^/catalog(/[a-z0-9]+){4}$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		{`^/catalog(/[a-z0-9]+){1,2}$`, "/catalog/api/v1/items/{id}", "", empty},
		{`^/catalog/api/v1/items/x*y+z?$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/y", found},
		// Unanchored: a match anywhere in the path.
		{`items/itm-`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/itm-", found},
		{`/v1/`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		{`^/catalog/`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		{`[0-9]$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/0", found},
		// Case folding.
		{`(?i)^/CATALOG/API/V1/ITEMS/ITM-\d+$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/itm-0", found},
		// Word boundaries: "\bitm" needs a non-word byte before it.
		{`^/catalog/api/v1/items/a\b`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/a", found},
		{`^/catalog/api/v1/items/[^/]*\Bb$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/ab", found},
		{`^/catalog/api/v1/items/\bb$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/b", found},
		{`^/catalog/api/v1/items/-\b-$`, "/catalog/api/v1/items/{id}", "", empty},
		// Multi-line anchors: no newline in a path, so the text's ends.
		{`(?m)^/catalog/api/v1/items/[0-9]$`, "/catalog/api/v1/items/{id}", "/catalog/api/v1/items/0", found},
		// Mismatches the generator must not paper over.
		{`^/catalog/api/v1/items/itm-[0-9]+$`, "/catalog/api/v1/items", "", empty},
		{`^/catalog/api/v1/item/[^/]+$`, "/catalog/api/v1/items/{id}", "", empty},
		{`^/catalog/api/v1/items/[^/]+/more$`, "/catalog/api/v1/items/{id}", "", empty},
		{`^/catalog/api/v1/items/$`, "/catalog/api/v1/items/{id}", "", empty},     // a placeholder is never empty
		{`^/catalog/api/v1/items/a/b$`, "/catalog/api/v1/items/{id}", "", empty},  // nor holds a "/"
		{`^/catalog/api/v1/items/{id}$`, "/catalog/api/v1/items/{id}", "", empty}, // "{" is never in a request path
		{`^/catalog/api/v1/items/é$`, "/catalog/api/v1/items/{id}", "", empty},    // nor is a raw "é"
		{`^$`, "/catalog/api/v1/items/{id}", "", empty},
		{`a^b`, "/catalog/api/v1/items/{id}", "", empty},
		// Several placeholders, literal text between them.
		{`^/catalog/api/v1/items/[0-9]+/parts/p[0-9]$`, "/catalog/api/v1/items/{id}/parts/{part}", "/catalog/api/v1/items/0/parts/p0", found},
	}
	for _, tt := range tests {
		t.Run(tt.rule+" ~ "+tt.template, func(t *testing.T) {
			a, err := compileLang(tt.rule)
			if err != nil {
				t.Fatal(err)
			}
			b, err := compileLang(templateRegexp(tt.template))
			if err != nil {
				t.Fatal(err)
			}
			budget := maxStates
			got, res := shortest(a, b, &budget)
			if got != tt.want || res != tt.res {
				t.Fatalf("shortest = %q, %v; want %q, %v", got, res, tt.want, tt.res)
			}
			if res == found && !regexp.MustCompile(tt.rule).MatchString(got) {
				t.Fatalf("the rule's regexp does not match the witness %q", got)
			}
		})
	}
}

// TestShortestAgreesWithRegexp holds shortest to Go's regexp package on
// random regexps over a small alphabet: for every pair, shortest finds a
// text both match exactly when brute force (every text of up to maxLen
// bytes) finds one, of the same length as the shortest brute force
// finds; a text it finds beyond maxLen is matched by both too.
func TestShortestAgreesWithRegexp(t *testing.T) {
	const alphabet = "aA-/"
	const maxLen = 5
	var texts []string
	level := []string{""}
	for n := 0; n <= maxLen; n++ {
		texts = append(texts, level...)
		var next []string
		for _, s := range level {
			for i := 0; i < len(alphabet); i++ {
				next = append(next, s+alphabet[i:i+1])
			}
		}
		level = next
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type compiled struct {
		src     string
		re      *regexp.Regexp
		lang    *lang
		matches []bool
	}
	var res []compiled
	for len(res) < 80 {
		src := randomRegexp(rng, 3)
		re, err := regexp.Compile(src)
		if err != nil {
			continue
		}
		l, err := compileLang(src)
		if err != nil {
			t.Fatalf("compileLang(%q): %v (regexp compiles it)", src, err)
		}
		m := make([]bool, len(texts))
		for i, s := range texts {
			m[i] = re.MatchString(s)
		}
		res = append(res, compiled{src, re, l, m})
	}
	checked := 0
	for i := range res {
		for j := i; j < len(res); j++ {
			a, b := res[i], res[j]
			want := -1
			for k := range texts {
				if a.matches[k] && b.matches[k] {
					want = k
					break
				}
			}
			budget := maxStates
			got, r := shortestIn(a.lang, b.lang, alphabet, &budget)
			switch {
			case r == unknown:
				t.Errorf("%q ~ %q: unknown", a.src, b.src)
			case want >= 0 && (r != found || len(got) != len(texts[want])):
				t.Errorf("%q ~ %q: shortest = %q, %v; want %q", a.src, b.src, got, r, texts[want])
			case want < 0 && r == found && len(got) <= maxLen:
				t.Errorf("%q ~ %q: shortest = %q, which brute force does not find", a.src, b.src, got)
			case r == found && !(a.re.MatchString(got) && b.re.MatchString(got)):
				t.Errorf("%q ~ %q: shortest = %q, which they do not both match", a.src, b.src, got)
			}
			if want >= 0 {
				checked++
			}
		}
	}
	if checked < 200 {
		t.Fatalf("only %d pairs had a common text: the generator makes too few interesting regexps", checked)
	}
}

// randomRegexp returns a random regexp over "aA-/" of the constructs path
// regexps use: literals, classes, any, alternation, concatenation,
// repeats, captures, anchors, word boundaries, case folding.
func randomRegexp(rng *rand.Rand, depth int) string {
	atoms := []string{"a", "A", "-", "/", "[a-]", "[^/]", ".", `\w`, `\W`, `\b`, `\B`, "^", "$", "(?i:a)", "(?m:^)", "(?m:$)", ""}
	if depth == 0 || rng.IntN(3) == 0 {
		return atoms[rng.IntN(len(atoms))]
	}
	sub := func() string { return randomRegexp(rng, depth-1) }
	switch rng.IntN(8) {
	case 0, 1:
		return sub() + sub()
	case 2:
		return sub() + sub() + sub()
	case 3:
		return "(" + sub() + "|" + sub() + ")"
	case 4:
		return "(?:" + sub() + ")?"
	case 5:
		return "(?:" + sub() + ")*"
	case 6:
		return "(" + sub() + ")+"
	default:
		return fmt.Sprintf("(?:%s){%d,%d}", sub(), rng.IntN(2), 1+rng.IntN(2))
	}
}

// TestShortestGivesUp: past maxStates the answer is unknown, never a
// claim of emptiness.
func TestShortestGivesUp(t *testing.T) {
	// Two regexps without a common text (one ends in "x", the other in
	// "y") whose product has far more than maxStates reachable states:
	// every pair of positions in the two 250-byte tails.
	a, err := compileLang(`^[a-z]*a[a-z]{250}x$`)
	if err != nil {
		t.Fatal(err)
	}
	b, err := compileLang(`^[a-z]*b[a-z]{250}y$`)
	if err != nil {
		t.Fatal(err)
	}
	budget := maxTotalStates
	if w, r := shortest(a, b, &budget); r != unknown {
		t.Fatalf("shortest = %q, %v; want unknown", w, r)
	}
	if budget > maxTotalStates-maxStates {
		t.Fatalf("budget left %d after a search of more than %d states", budget, maxStates)
	}
	// Once the budget is spent, every search that needs one gives up,
	// even one that would find a text at once.
	c, err := compileLang(`^/a$`)
	if err != nil {
		t.Fatal(err)
	}
	budget = 0
	if w, r := shortest(c, c, &budget); r != unknown {
		t.Fatalf("with no budget: shortest = %q, %v; want unknown", w, r)
	}
	// Disjoint literal prefixes need no search, and no budget.
	d, err := compileLang(`^/b`)
	if err != nil {
		t.Fatal(err)
	}
	if w, r := shortest(c, d, &budget); r != empty {
		t.Fatalf("disjoint prefixes: shortest = %q, %v; want empty", w, r)
	}
}

func TestTemplateRegexp(t *testing.T) {
	for uri, want := range map[string]string{
		"/catalog/api/v1/items":             `^/catalog/api/v1/items$`,
		"/catalog/api/v1/items/{id}":        `^/catalog/api/v1/items/[^/]+$`,
		"/catalog/a.b/{x}/c+d/{y}":          `^/catalog/a\.b/[^/]+/c\+d/[^/]+$`,
		"/catalog/api/v1/items/{id}:cancel": `^/catalog/api/v1/items/\{id\}:cancel$`,
	} {
		if got := templateRegexp(uri); got != want {
			t.Errorf("templateRegexp(%q) = %q; want %q", uri, got, want)
		}
	}
	if strings.Contains(templateRegexp("/x/{id}"), "{") {
		t.Fatal("placeholder left in")
	}
}
