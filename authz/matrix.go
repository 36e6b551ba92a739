package authz

import (
	"slices"
	"strings"
	"text/tabwriter"
)

// Matrix is the role × tool visibility table: which tools a caller with
// one role sees in tools/list. servertest.VisibilityMatrix reads it from
// a running server, and authz/export's Exporter.Matrix from a policy.
type Matrix struct {
	// Roles are the roles, sorted.
	Roles []string `json:"roles"`
	// Tools are the tools, sorted.
	Tools []string `json:"tools"`
	// Visible maps each role to the tools it sees, sorted (an empty list,
	// never null, for a role that sees none).
	Visible map[string][]string `json:"visible"`
}

// Text returns the matrix as an aligned text table: a row per tool, a
// column per role, "x" where the role sees the tool and "-" where not.
func (m Matrix) Text() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	tw.Write([]byte("tool"))
	for _, r := range m.Roles {
		tw.Write([]byte("\t" + r))
	}
	tw.Write([]byte("\n"))
	for _, t := range m.Tools {
		tw.Write([]byte(t))
		for _, r := range m.Roles {
			mark := "-"
			if _, ok := slices.BinarySearch(m.Visible[r], t); ok {
				mark = "x"
			}
			tw.Write([]byte("\t" + mark))
		}
		tw.Write([]byte("\n"))
	}
	tw.Flush() // writes to a strings.Builder cannot fail
	return b.String()
}
