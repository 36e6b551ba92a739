package authz

import (
	"regexp/syntax"
	"strings"
	"unicode/utf8"
)

// Most path regexps are route templates in disguise:
//
//	^/catalog/api/v1/items/[^/]+$            (RolePolicyFor)
//	^/catalog/api/v1/items(/[^/]+)?$         (hand-written)
//	^/catalog/api/v1/(items|products)$
//
// Such a regexp matches a URI iff the URI, split at "/", has the same
// parts as one of the regexp's variants, each literal part equal and each
// "[^/]+" part non-empty. Those rules are indexed in a trie of parts and
// decided without running a regexp, in time independent of the number of
// rules; every other regexp runs as a regexp.

// maxVariants bounds the expansion of optional and alternative parts.
const maxVariants = 16

// segPart is one "/"-separated part of a template: a literal, or any
// non-empty text without "/".
type segPart struct {
	lit  string
	wild bool
}

// item is one element of an expanded regexp: a literal, a "[^/]+", or the
// beginning or end of the text.
type item struct {
	lit               string
	wild, begin, tEnd bool
}

// templates returns the part sequences equivalent to the regexp re, or
// false if re is not a template in disguise.
func templates(pattern string) ([][]segPart, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, false
	}
	return templatesOf(re.Simplify())
}

// templatesOf is templates of a parsed and simplified regexp.
func templatesOf(re *syntax.Regexp) ([][]segPart, bool) {
	variants, ok := expand(re)
	if !ok {
		return nil, false
	}
	out := make([][]segPart, 0, len(variants))
	for _, v := range variants {
		parts, ok := segParts(v)
		if !ok {
			return nil, false
		}
		out = append(out, parts)
	}
	return out, true
}

func expand(re *syntax.Regexp) ([][]item, bool) {
	switch re.Op {
	case syntax.OpBeginText:
		return [][]item{{{begin: true}}}, true
	case syntax.OpEndText:
		return [][]item{{{tEnd: true}}}, true
	case syntax.OpEmptyMatch:
		return [][]item{{}}, true
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 {
			return nil, false
		}
		for _, r := range re.Rune {
			// Invalid input bytes decode to RuneError: a literal one would
			// match them, a byte comparison would not.
			if r == utf8.RuneError {
				return nil, false
			}
		}
		return [][]item{{{lit: string(re.Rune)}}}, true
	case syntax.OpPlus:
		if isNotSlash(re.Sub[0]) {
			return [][]item{{{wild: true}}}, true
		}
	case syntax.OpCapture:
		return expand(re.Sub[0])
	case syntax.OpQuest:
		sub, ok := expand(re.Sub[0])
		if !ok || len(sub)+1 > maxVariants {
			return nil, false
		}
		return append([][]item{{}}, sub...), true
	case syntax.OpAlternate:
		var out [][]item
		for _, s := range re.Sub {
			sub, ok := expand(s)
			if !ok || len(out)+len(sub) > maxVariants {
				return nil, false
			}
			out = append(out, sub...)
		}
		return out, true
	case syntax.OpConcat:
		out := [][]item{{}}
		for _, s := range re.Sub {
			sub, ok := expand(s)
			if !ok || len(out)*len(sub) > maxVariants {
				return nil, false
			}
			next := make([][]item, 0, len(out)*len(sub))
			for _, a := range out {
				for _, b := range sub {
					next = append(next, append(append([]item(nil), a...), b...))
				}
			}
			out = next
		}
		return out, true
	}
	return nil, false
}

// isNotSlash reports whether re is the class [^/] (newline included, as
// Perl flags make it).
func isNotSlash(re *syntax.Regexp) bool {
	r := re.Rune
	return re.Op == syntax.OpCharClass && len(r) == 4 && r[0] == 0 && r[1] == '/'-1 && r[2] == '/'+1 && r[3] == utf8.MaxRune
}

// segParts turns an expanded variant into template parts: it must begin
// with the beginning of the text, end with its end, and every "[^/]+" must
// be a whole part.
func segParts(v []item) ([]segPart, bool) {
	if len(v) < 2 || !v[0].begin || !v[len(v)-1].tEnd {
		return nil, false
	}
	var parts []segPart
	var cur strings.Builder
	wild := false
	for _, it := range v[1 : len(v)-1] {
		switch {
		case it.begin || it.tEnd:
			return nil, false
		case it.wild:
			if wild || cur.Len() > 0 {
				return nil, false
			}
			wild = true
		default:
			for i := 0; i < len(it.lit); i++ {
				if it.lit[i] == '/' {
					parts = append(parts, segPart{lit: cur.String(), wild: wild})
					cur.Reset()
					wild = false
					continue
				}
				if wild {
					return nil, false
				}
				cur.WriteByte(it.lit[i])
			}
		}
	}
	return append(parts, segPart{lit: cur.String(), wild: wild}), true
}

// segNode is a node of the trie of template parts. The root stands before
// the first part (the text before the URI's first "/", usually empty).
type segNode struct {
	lit         map[string]*segNode
	wild        *segNode
	allow, deny bool // some rule whose template ends here allows, denies
}

func (n *segNode) insert(parts []segPart, deny bool) {
	for _, p := range parts {
		var next *segNode
		if p.wild {
			if n.wild == nil {
				n.wild = &segNode{}
			}
			next = n.wild
		} else {
			if n.lit == nil {
				n.lit = map[string]*segNode{}
			}
			next = n.lit[p.lit]
			if next == nil {
				next = &segNode{}
				n.lit[p.lit] = next
			}
		}
		n = next
	}
	if deny {
		n.deny = true
	} else {
		n.allow = true
	}
}

// match reports whether some template of the trie allows the rest of a
// URI, and whether one denies it. rest holds the parts still to match;
// done means there are none.
func (n *segNode) match(rest string, done bool) (allow, deny bool) {
	if done {
		return n.allow, n.deny
	}
	part, next, more := strings.Cut(rest, "/")
	if c := n.lit[part]; c != nil {
		allow, deny = c.match(next, !more)
		if deny {
			return allow, deny
		}
	}
	if n.wild != nil && part != "" {
		a, d := n.wild.match(next, !more)
		allow, deny = allow || a, d
	}
	return allow, deny
}
