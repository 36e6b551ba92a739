// Package matrix renders a role × tool visibility matrix as the aligned
// text table that authz/export's Matrix and servertest's golden files
// share: one rendering, so that "routes -matrix" and a service's pinned
// matrix read alike. Nothing here is API.
package matrix

import (
	"slices"
	"strings"
	"text/tabwriter"
)

// Text returns a row per tool, a column per role, "x" where the role
// sees the tool (visible[role] is sorted) and "-" where not.
func Text(roles, tools []string, visible map[string][]string) string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	tw.Write([]byte("tool"))
	for _, r := range roles {
		tw.Write([]byte("\t" + r))
	}
	tw.Write([]byte("\n"))
	for _, t := range tools {
		tw.Write([]byte(t))
		for _, r := range roles {
			mark := "-"
			if _, ok := slices.BinarySearch(visible[r], t); ok {
				mark = "x"
			}
			tw.Write([]byte("\t" + mark))
		}
		tw.Write([]byte("\n"))
	}
	tw.Flush() // writes to a strings.Builder cannot fail
	return b.String()
}
