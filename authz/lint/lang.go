package lint

import (
	"regexp"
	"regexp/syntax"
	"strings"
)

// The checks ask questions of regular languages: is there a concrete path
// of a route template that a rule matches, is there a path that a deny
// rule and an allow rule both match. A lang is a path regexp compiled to
// an NFA (regexp/syntax's Prog) for searching anywhere in the text, as
// authz matches it; shortest runs two of them side by side over the bytes
// of escaped paths and returns the shortest text both match, built
// breadth-first, or says that there is none.

// pathAlphabet are the bytes an escaped path is made of (RFC 3986 pchar
// and "/"), in the order shortest tries them: a witness reads "itm-0",
// not "itm-!".
const pathAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-._~!$&'()*+,;=:@%/"

// maxStates bounds the pairs of states one shortest call explores, and
// maxTotalStates those of all the calls of one lint: past them the answer
// is unknown, and no check claims anything from it. A search that gives
// up takes some 10ms; the bounds keep a policy of pathological regexps
// from taking minutes.
const (
	maxStates      = 1 << 15
	maxTotalStates = 1 << 22
)

// lang is a compiled path regexp.
type lang struct {
	prog *syntax.Prog
	// prefix is literal text every text of the language begins with
	// (that of a regexp anchored at the beginning), "" if none is known.
	prefix string
}

// compileLang compiles a path regexp (Go RE2 syntax, Perl flags, as authz
// compiles it) so that a text is in the language iff the regexp matches
// somewhere in it.
func compileLang(pattern string) (*lang, error) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, err
	}
	dotStar := &syntax.Regexp{Op: syntax.OpStar, Sub: []*syntax.Regexp{{Op: syntax.OpAnyChar}}}
	search := &syntax.Regexp{Op: syntax.OpConcat, Sub: []*syntax.Regexp{dotStar, re.Simplify(), dotStar}}
	prog, err := syntax.Compile(search)
	if err != nil {
		return nil, err
	}
	return &lang{prog: prog, prefix: anchoredPrefix(search.Sub[1])}, nil
}

// anchoredPrefix returns the literal text that follows the beginning of
// the text in a simplified regexp that starts with "^", or "".
func anchoredPrefix(re *syntax.Regexp) string {
	if re.Op != syntax.OpConcat || len(re.Sub) == 0 || re.Sub[0].Op != syntax.OpBeginText {
		return ""
	}
	var b strings.Builder
	for _, s := range re.Sub[1:] {
		if s.Op != syntax.OpLiteral || s.Flags&syntax.FoldCase != 0 {
			break
		}
		b.WriteString(string(s.Rune))
	}
	return b.String()
}

// disjoint reports whether a and b cannot have a text in common because
// their texts begin with different literal text: a quick answer of
// shortest's empty, which most pairs of a policy's rule and a table's
// route get.
func disjoint(a, b *lang) bool {
	return !strings.HasPrefix(a.prefix, b.prefix) && !strings.HasPrefix(b.prefix, a.prefix)
}

// templateRegexp returns the anchored regexp of a route template's
// concrete paths: literal segments as written, a "{name}" segment as
// "[^/]+" (within the path alphabet: one non-empty escaped segment).
func templateRegexp(uri string) string {
	var b strings.Builder
	b.WriteByte('^')
	for i, seg := range strings.Split(uri, "/") {
		if i > 0 {
			b.WriteByte('/')
		}
		if isPlaceholder(seg) {
			b.WriteString("[^/]+")
		} else {
			b.WriteString(regexp.QuoteMeta(seg))
		}
	}
	b.WriteByte('$')
	return b.String()
}

// isPlaceholder reports whether a template segment is "{name}".
func isPlaceholder(seg string) bool {
	return len(seg) >= 2 && seg[0] == '{' && seg[len(seg)-1] == '}'
}

// result is what shortest found.
type result int

const (
	empty   result = iota // no text is in both languages
	found                 // the witness is the shortest text in both
	unknown               // the search gave up (maxStates)
)

// Pending conditions on what follows a position, from assertions
// already passed: the text ends here, the next byte is a word byte, it
// is not (or the text ends).
const (
	needEnd uint8 = 1 << iota
	needWord
	needNonWord
)

// thread is one NFA state of a lang: an instruction that consumes a byte
// or matches, with the conditions on the next byte.
type thread struct {
	pc   uint32
	need uint8
}

// pair is a state of the product of two langs.
type pair struct {
	prevWord bool // the byte before is a word byte
	a, b     thread
}

// shortest returns the shortest text made of pathAlphabet that both a and
// b contain, breadth-first with the alphabet's order deciding ties among
// the transitions of a state; empty if there is none, unknown if the
// search gave up. The states it explores are taken from *budget; with
// none left it gives up.
func shortest(a, b *lang, budget *int) (string, result) {
	return shortestIn(a, b, pathAlphabet, budget)
}

// shortestIn is shortest over the bytes of alphabet.
func shortestIn(a, b *lang, alphabet string, budget *int) (string, result) {
	if disjoint(a, b) {
		return "", empty
	}
	limit := min(maxStates, *budget)
	classes := alphabetClasses(a, b, alphabet)
	type node struct {
		st     pair
		parent int
		c      byte
	}
	var nodes []node
	defer func() { *budget -= len(nodes) }()
	seen := map[pair]bool{}
	add := func(st pair, parent int, c byte) {
		if !seen[st] {
			seen[st] = true
			nodes = append(nodes, node{st, parent, c})
		}
	}
	for _, ta := range a.closure(nil, uint32(a.prog.Start), 0, true, false) {
		for _, tb := range b.closure(nil, uint32(b.prog.Start), 0, true, false) {
			add(pair{a: ta, b: tb}, -1, 0)
		}
	}
	var nextA, nextB []thread
	for i := 0; i < len(nodes); i++ {
		if len(nodes) > limit {
			return "", unknown
		}
		st := nodes[i].st
		if a.accepts(st.a) && b.accepts(st.b) {
			var w []byte
			for j := i; nodes[j].parent >= 0; j = nodes[j].parent {
				w = append(w, nodes[j].c)
			}
			for l, r := 0, len(w)-1; l < r; l, r = l+1, r-1 {
				w[l], w[r] = w[r], w[l]
			}
			return string(w), found
		}
		for _, c := range classes {
			nextA = a.step(nextA[:0], st.a, c)
			if len(nextA) == 0 {
				continue
			}
			nextB = b.step(nextB[:0], st.b, c)
			w := syntax.IsWordChar(rune(c))
			for _, ta := range nextA {
				for _, tb := range nextB {
					add(pair{prevWord: w, a: ta, b: tb}, i, c)
				}
			}
		}
	}
	return "", empty
}

// alphabetClasses returns one byte of alphabet per class of bytes that
// every consuming instruction of a and b, and the word-boundary
// assertions, treat alike: the first of the class in the alphabet's
// order.
func alphabetClasses(a, b *lang, alphabet string) []byte {
	var out []byte
	seen := map[string]bool{}
	var sig []byte
	for i := 0; i < len(alphabet); i++ {
		c := alphabet[i]
		sig = sig[:0]
		if syntax.IsWordChar(rune(c)) {
			sig = append(sig, 1)
		} else {
			sig = append(sig, 0)
		}
		for _, l := range [2]*lang{a, b} {
			for pc := range l.prog.Inst {
				in := &l.prog.Inst[pc]
				if isConsuming(in.Op) {
					if consumes(in, c) {
						sig = append(sig, 1)
					} else {
						sig = append(sig, 0)
					}
				}
			}
		}
		if !seen[string(sig)] {
			seen[string(sig)] = true
			out = append(out, c)
		}
	}
	return out
}

func isConsuming(op syntax.InstOp) bool {
	switch op {
	case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
		return true
	}
	return false
}

// consumes reports whether the consuming instruction in matches c.
func consumes(in *syntax.Inst, c byte) bool {
	switch in.Op {
	case syntax.InstRuneAny:
		return true
	case syntax.InstRuneAnyNotNL:
		return c != '\n'
	}
	return in.MatchRune(rune(c))
}

// accepts reports whether t matches if the text ends here.
func (l *lang) accepts(t thread) bool {
	return l.prog.Inst[t.pc].Op == syntax.InstMatch && t.need&needWord == 0
}

// step appends to out the threads t leads to after consuming c.
func (l *lang) step(out []thread, t thread, c byte) []thread {
	in := &l.prog.Inst[t.pc]
	if !isConsuming(in.Op) || !consumes(in, c) {
		return out
	}
	w := syntax.IsWordChar(rune(c))
	if t.need&needEnd != 0 || t.need&needWord != 0 && !w || t.need&needNonWord != 0 && w {
		return out
	}
	return l.closure(out, in.Out, 0, false, w)
}

// closure appends to out the consuming and matching threads reachable
// from pc through instructions that consume nothing, given whether the
// position is the text's beginning and whether the byte before it is a
// word byte.
func (l *lang) closure(out []thread, pc uint32, need uint8, begin, prevWord bool) []thread {
	type item struct {
		pc   uint32
		need uint8
	}
	seen := map[item]bool{}
	stack := []item{{pc, need}}
	for len(stack) > 0 {
		it := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[it] {
			continue
		}
		seen[it] = true
		in := &l.prog.Inst[it.pc]
		switch in.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, item{in.Arg, it.need}, item{in.Out, it.need})
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, item{in.Out, it.need})
		case syntax.InstEmptyWidth:
			if n, ok := assert(syntax.EmptyOp(in.Arg), it.need, begin, prevWord); ok {
				stack = append(stack, item{in.Out, n})
			}
		case syntax.InstFail:
		default: // consuming, or InstMatch
			out = append(out, thread{it.pc, it.need})
		}
	}
	return out
}

// assert applies the zero-width assertions op at a position: those on
// what precedes it are decided, those on what follows become conditions
// on the next byte. The path alphabet has no newline, so a line's
// beginning and end are the text's.
func assert(op syntax.EmptyOp, need uint8, begin, prevWord bool) (uint8, bool) {
	if op&(syntax.EmptyBeginLine|syntax.EmptyBeginText) != 0 && !begin {
		return 0, false
	}
	if op&(syntax.EmptyEndLine|syntax.EmptyEndText) != 0 {
		need |= needEnd
	}
	if op&syntax.EmptyWordBoundary != 0 {
		if prevWord {
			need |= needNonWord
		} else {
			need |= needWord
		}
	}
	if op&syntax.EmptyNoWordBoundary != 0 {
		if prevWord {
			need |= needWord
		} else {
			need |= needNonWord
		}
	}
	if need&needWord != 0 && need&(needNonWord|needEnd) != 0 {
		return 0, false
	}
	return need, true
}
