package export_test

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolroute/toolroute/authz/export"
)

// TestMatrix: the matrix computed from the table and the policy is what
// real clients of the real server, one per role, list.
func TestMatrix(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			m := f.exp.Matrix()
			for _, role := range m.Roles {
				if diff := cmp.Diff(f.visible(t, []string{role}), m.Visible[role]); diff != "" {
					t.Errorf("role %q (-server +matrix):\n%s", role, diff)
				}
			}
			data, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			var back export.Matrix
			if err := json.Unmarshal(data, &back); err != nil || !cmp.Equal(m, back) {
				t.Errorf("JSON round trip: %v\n%s", err, data)
			}
		})
	}
}

func TestMatrixText(t *testing.T) {
	m := export.Matrix{
		Roles:   []string{"admin", "viewer"},
		Tools:   []string{"delete_item", "get_item", "nobody's"},
		Visible: map[string][]string{"admin": {"delete_item", "get_item"}, "viewer": {"get_item"}},
	}
	want := `tool         admin  viewer
delete_item  x      -
get_item     x      x
nobody's     -      -
`
	if diff := cmp.Diff(want, m.Text()); diff != "" {
		t.Errorf("text (-want +got):\n%s", diff)
	}
}
