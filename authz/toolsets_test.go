package authz_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
)

// TestPolicyToolsets: a caller is limited to the union of its roles'
// toolsets when every role of its the policy defines lists some, and not
// limited when one lists none; roles the policy does not define play no
// part.
func TestPolicyToolsets(t *testing.T) {
	p, err := authz.ParsePolicy([]byte(`[
	 {"role": "a", "toolsets": ["x", "w", "x"], "accessPolicies": [{"path": "^/s/x$", "methods": ["GET"], "effect": "allow"}]},
	 {"role": "b", "toolsets": ["y"], "accessPolicies": [{"path": "^/s/x$", "methods": ["GET"], "effect": "allow"}]},
	 {"role": "free", "accessPolicies": [{"path": "^/s/x$", "methods": ["GET"], "effect": "allow"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		roles   []string
		tags    []string
		limited bool
	}{
		{[]string{"a"}, []string{"w", "x"}, true},
		{[]string{"b", "a"}, []string{"w", "x", "y"}, true},
		{[]string{"a", "free"}, nil, false},
		{[]string{"a", "ghost"}, []string{"w", "x"}, true},
		{[]string{"ghost"}, nil, false},
		{nil, nil, false},
	} {
		tags, limited := p.Toolsets(authz.Caller{Subject: "s", Roles: c.roles})
		if limited != c.limited || !cmp.Equal(tags, c.tags) {
			t.Errorf("Toolsets(%v) = %v, %v; want %v, %v", c.roles, tags, limited, c.tags, c.limited)
		}
	}
}

// TestPolicyToolsetsRefused: an empty toolsets list and a value that is
// not a tag are refused, naming the role.
func TestPolicyToolsetsRefused(t *testing.T) {
	for _, c := range []struct{ toolsets, want string }{
		{`[]`, `authz: policy: role "r" (entry 0): toolsets is empty: name at least one tag, or leave toolsets out for a role that is not limited`},
		{`["Reads"]`, `authz: policy: role "r" (entry 0): toolsets: "Reads" is not a tag (1 to 64 of a-z 0-9 _ . -, starting with a letter or digit)`},
	} {
		_, err := authz.ParsePolicy([]byte(`[{"role": "r", "toolsets": ` + c.toolsets + `, "accessPolicies": [{"path": "^/s/x$", "methods": ["GET"], "effect": "allow"}]}]`))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("toolsets %s: %v, want %s", c.toolsets, err, c.want)
		}
	}
}
