package permission

import (
	"fmt"
	"slices"

	"github.com/toolroute/toolroute/authz"
)

// Rule decides one capability on the subjects, tools and principals it
// matches. Rules are tried in order and the first that matches a
// (principal, tool, subject, capability) decides it; when none does, the
// user is asked.
//
// Principal, Tool and Subject are patterns in which "*" matches any run
// of characters (an empty pattern matches everything). Capability is a
// capability name, or "" (or "*") for any capability.
//
// An authz.Allow rule for capability C matches a requested capability R when C
// implies R (C itself included); a authz.Deny rule for C matches R when R
// implies C. So "allow write" also allows "read" if write implies read,
// and "deny read" also denies "write".
type Rule struct {
	Effect     authz.Effect
	Principal  string
	Tool       string
	Subject    string
	Capability string
}

// String describes r for messages, "*" standing for any.
func (r Rule) String() string {
	star := func(s string) string {
		if s == "" {
			return "*"
		}
		return s
	}
	effect := string(r.Effect)
	if effect == "" {
		effect = "(no effect)"
	}
	return fmt.Sprintf("%s %s on %s (principal %s, tool %s)", effect, star(r.Capability), star(r.Subject), star(r.Principal), star(r.Tool))
}

// matches reports whether r decides capability want on (principal, tool,
// subject).
func (r *Rule) matches(c *closures, principal, tool, subject, want string) bool {
	if !glob(r.Principal, principal) || !glob(r.Tool, tool) || !glob(r.Subject, subject) {
		return false
	}
	if r.Capability == "" || r.Capability == "*" {
		return true
	}
	if r.Effect == authz.Allow {
		return c.implies(r.Capability, want)
	}
	return c.implies(want, r.Capability)
}

// glob matches s against pattern, in which "*" matches any run of
// characters and everything else matches itself. An empty pattern
// matches everything.
func glob(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	// Iterative wildcard matching with backtracking to the last star.
	p, i := 0, 0
	star, mark := -1, 0
	for i < len(s) {
		switch {
		case p < len(pattern) && pattern[p] == '*':
			star, mark = p, i
			p++
		case p < len(pattern) && pattern[p] == s[i]:
			p++
			i++
		case star >= 0:
			p = star + 1
			mark++
			i = mark
		default:
			return false
		}
	}
	for p < len(pattern) && pattern[p] == '*' {
		p++
	}
	return p == len(pattern)
}

// closures holds every capability's transitive closure under Implies,
// computed once. A capability Implies does not mention implies only
// itself.
type closures struct {
	of map[string][]string // capability → sorted closure, itself included
	by map[string][]string // capability → sorted capabilities implying it
}

func newClosures(implies map[string][]string) *closures {
	c := &closures{of: map[string][]string{}, by: map[string][]string{}}
	var all []string
	for k, vs := range implies {
		all = append(all, k)
		all = append(all, vs...)
	}
	slices.Sort(all)
	all = slices.Compact(all)
	for _, start := range all {
		seen := map[string]bool{start: true}
		stack := []string{start}
		for len(stack) > 0 {
			cur := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			for _, next := range implies[cur] {
				if !seen[next] {
					seen[next] = true
					stack = append(stack, next)
				}
			}
		}
		cl := make([]string, 0, len(seen))
		for k := range seen {
			cl = append(cl, k)
		}
		slices.Sort(cl)
		c.of[start] = cl
		for _, k := range cl {
			c.by[k] = append(c.by[k], start)
		}
	}
	for k := range c.by {
		slices.Sort(c.by[k])
	}
	return c
}

// closure returns capability's closure (sorted; do not modify).
func (c *closures) closure(capability string) []string {
	if cl, ok := c.of[capability]; ok {
		return cl
	}
	return []string{capability}
}

// impliedBy returns the capabilities whose closure holds capability
// (sorted; do not modify).
func (c *closures) impliedBy(capability string) []string {
	if by, ok := c.by[capability]; ok {
		return by
	}
	return []string{capability}
}

// implies reports whether a's closure holds b.
func (c *closures) implies(a, b string) bool {
	_, ok := slices.BinarySearch(c.closure(a), b)
	return ok
}
