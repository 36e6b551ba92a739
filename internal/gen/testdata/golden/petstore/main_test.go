package main

import (
	"flag"
	"os"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"

	"example.com/petstore-mcp/tools"
)

// update makes TestVisibility write testdata/visibility.golden: go test
// -update, then review the change.
var update = flag.Bool("update", false, "rewrite testdata/visibility.golden")

// TestVisibility pins which role sees which tool under policy.json (a
// change to the tools or the policy shows in review as a change to
// testdata/visibility.golden).
func TestVisibility(t *testing.T) {
	data, err := os.ReadFile("policy.json")
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.ParsePolicy(data)
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: policy}, server.Install(tools.Registry, &tools.Deps{}))
	if err != nil {
		t.Fatal(err)
	}
	servertest.CheckVisibility(t, s, "testdata/visibility.golden", policy.Roles()...)
}
