package tokenfile_test

import (
	"fmt"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/tokenfile"
)

// Parse a tokens file against a policy's roles, and turn it into the
// callers server.StaticTokens knows.
func Example() {
	policy := authz.MustParsePolicy([]byte(`[
  {"role": "viewer", "accessPolicies": [{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}
]`))
	entries, err := tokenfile.Parse([]byte(`[{"token": "s3cret", "subject": "alice", "roles": ["viewer"]}]`), policy.Roles())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(entries[0])
	fmt.Println(tokenfile.Callers(entries)["s3cret"].Subject)

	_, err = tokenfile.Parse([]byte(`[{"token": "s3cret", "subject": "bob", "roles": ["editor"]}]`), policy.Roles())
	fmt.Println(err)
	// Output:
	// Entry{Subject: "alice", Roles: ["viewer"], Token: [redacted]}
	// alice
	// tokenfile: entry 0 (subject "bob"): the policy has no role "editor" (it has "viewer")
}
