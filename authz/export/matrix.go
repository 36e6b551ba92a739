package export

import (
	"slices"

	"github.com/toolroute/toolroute/internal/core/matrix"
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

// Text returns the matrix as an aligned text table: a row per tool, a
// column per role, "x" where the role sees the tool and "-" where not
// (the form servertest.CheckVisibility pins in golden files).
func (m Matrix) Text() string { return matrix.Text(m.Roles, m.Tools, m.Visible) }

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
