package export

import (
	"slices"

	"github.com/toolroute/toolroute/authz"
)

// Matrix returns the visibility matrix of the table under the role
// policies: a role sees a tool iff the tool is local or the role may
// reach one of its routes (authz's visibility rule, decided by
// authz.Policy on the route templates).
func (e *Exporter) Matrix() authz.Matrix {
	m := authz.Matrix{Roles: e.Roles(), Tools: make([]string, 0, len(e.table.Tools)), Visible: make(map[string][]string, len(e.names))}
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
