package servertest_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type none struct{}

func newServer(t *testing.T) *mcp.Server {
	t.Helper()
	reg := registry.New[none]()
	add := func(name, method string, local bool) {
		tl := tool.Tool[none]{Name: name, Description: "d", Behaviour: behaviour.ReadOnly, Local: local,
			Handler: tool.Handle(func(context.Context, none, *mcp.CallToolRequest, none) (none, error) { return none{}, nil })}
		if !local {
			tl.ServiceKey = "s"
			tl.VisibilityRoutes = []tool.Route{tool.ServiceRoute("s", method, "/x")}
		}
		reg.Register(tl)
	}
	add("read", "GET", false)
	add("write", "POST", false)
	add("hidden", "DELETE", false)
	add("local", "", true)
	p, err := authz.NewPolicy([]authz.RolePolicy{
		{Role: "reader", AccessPolicies: []authz.AccessPolicy{{Path: "^/s/x$", Methods: []string{"GET"}, Effect: "allow"}}},
		{Role: "writer", AccessPolicies: []authz.AccessPolicy{{Path: "^/s/x$", Methods: []string{"GET", "POST"}, Effect: "allow"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: p}, server.Install(reg, none{}))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestVisibilityMatrix: each role's list is what a caller with that role
// lists, sorted; a role named twice is asked once.
func TestVisibilityMatrix(t *testing.T) {
	m := servertest.VisibilityMatrix(t, newServer(t), "writer", "reader", "writer", "stranger")
	want := map[string][]string{"reader": {"local", "read"}, "stranger": {"local"}, "writer": {"local", "read", "write"}}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("matrix (-want +got):\n%s", diff)
	}
}

// TestCheckVisibilityText: the golden file's form: a column per role,
// sorted, and a row per tool some role sees.
func TestCheckVisibilityText(t *testing.T) {
	path := filepath.Join(t.TempDir(), "matrix.txt")
	want := "tool   reader  stranger  writer\nlocal  x       x         x\nread   x       -         x\nwrite  -       -         x\n"
	if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
	r := &recorder{TB: t}
	servertest.CheckVisibility(r, newServer(t), path, "writer", "reader", "stranger")
	if r.failed {
		t.Errorf("CheckVisibility refused the expected table %q", want)
	}
}

// TestCheckVisibility: an equal golden file passes; a different or
// missing one fails the test (seen through a recorder standing in for
// it).
func TestCheckVisibility(t *testing.T) {
	s := newServer(t)
	path := filepath.Join(t.TempDir(), "matrix.txt")
	if err := os.WriteFile(path, []byte("tool   reader\nlocal  x\nread   x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	servertest.CheckVisibility(t, s, path, "reader")
	for name, c := range map[string]struct{ path, role string }{
		"different": {path, "writer"},
		"missing":   {filepath.Join(t.TempDir(), "none.txt"), "reader"},
	} {
		r := &recorder{TB: t}
		servertest.CheckVisibility(r, s, c.path, c.role)
		if !r.failed {
			t.Errorf("CheckVisibility with a %s file passed", name)
		}
	}
}

// recorder notes a failure instead of failing the test.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Errorf(string, ...any) { r.failed = true }
func (r *recorder) Fatalf(string, ...any) { r.failed = true }
func (r *recorder) Helper()               {}
