package export

import (
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// Matrix is the role × tool visibility table: which tools a caller with
// one role sees in tools/list.
type Matrix struct {
	// Roles are the roles, sorted.
	Roles []string `json:"roles"`
	// Tools are the tools, sorted.
	Tools []string `json:"tools"`
	// Visible maps each role to the tools it sees, sorted (an empty list,
	// never null, for a role that sees none).
	Visible map[string][]string `json:"visible"`
}

// Matrix returns the visibility matrix of the table under the role
// policies: a role sees a tool iff the tool is local or the role may
// reach one of its routes (authz's visibility rule, decided by
// authz.Policy on the route templates).
func (e *Exporter) Matrix() Matrix {
	m := Matrix{Roles: e.Roles(), Tools: make([]string, 0, len(e.table.Tools)), Visible: make(map[string][]string, len(e.names))}
	for _, t := range e.table.Tools {
		m.Tools = append(m.Tools, t.Name)
	}
	slices.Sort(m.Tools)
	for _, role := range e.names {
		vis := []string{}
		for _, t := range e.table.Tools {
			if e.visible(role, t) {
				vis = append(vis, t.Name)
			}
		}
		slices.Sort(vis)
		m.Visible[role] = vis
	}
	return m
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

// WriteText writes [Matrix.Text] to w.
func (m Matrix) WriteText(w io.Writer) error { return writeString(w, m.Text()) }

// WriteJSON writes the matrix as indented JSON.
func (m Matrix) WriteJSON(w io.Writer) error { return writeJSON(w, m) }
