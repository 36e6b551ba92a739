package lint

import (
	"strings"
	"testing"

	"github.com/toolroute/toolroute/authz"
)

// TestMethodsAreAuthzs holds the lint's list of methods to authz's: each
// is one authz.NewPolicy accepts, and the methods it refuses are not in
// the list.
func TestMethodsAreAuthzs(t *testing.T) {
	accepts := func(m string) bool {
		_, err := authz.NewPolicy([]authz.RolePolicy{{Role: "r", AccessPolicies: []authz.AccessPolicy{{Path: "^/x$", Methods: []string{m}, Effect: authz.Allow}}}})
		return err == nil
	}
	for _, m := range methods {
		if !accepts(m) {
			t.Errorf("authz refuses %q, which the lint accepts", m)
		}
		if l := strings.ToLower(m); accepts(l) {
			t.Errorf("authz accepts %q, which the lint refuses", l)
		}
	}
	for _, m := range []string{"FETCH", "PROPFIND", "QUERY", "*", "ANY", "", "Get"} {
		if accepts(m) {
			t.Errorf("authz accepts %q, which the lint refuses", m)
		}
	}
}
