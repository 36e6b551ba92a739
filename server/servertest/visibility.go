package servertest

import (
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/matrix"
)

// VisibilityMatrix connects one client to s per role, as a caller with
// that one role (subject "servertest:ROLE"), and returns what each lists
// in tools/list: for each role, the names of the tools it sees, sorted
// (an empty list for a role that sees none). It is the role × tool
// visibility matrix as the server decides it.
func VisibilityMatrix(tb testing.TB, s *mcp.Server, roles ...string) map[string][]string {
	tb.Helper()
	visible := make(map[string][]string, len(roles))
	for _, role := range roles {
		if _, done := visible[role]; !done {
			cs := Connect(tb, s, &authz.Caller{Subject: "servertest:" + role, Roles: []string{role}}, Options{})
			visible[role] = ToolNames(tb, cs)
		}
	}
	return visible
}

// matrixText is [VisibilityMatrix] as the text table authz/export's
// Matrix.Text writes: a column per role, a row per tool some role sees.
func matrixText(visible map[string][]string) string {
	roles := slices.Sorted(maps.Keys(visible))
	var tools []string
	for _, names := range visible {
		tools = append(tools, names...)
	}
	slices.Sort(tools)
	return matrix.Text(roles, slices.Compact(tools), visible)
}

// CheckVisibility pins who sees what: it compares the text form of
// [VisibilityMatrix] (a row per tool, a column per role, as
// "example-service routes -matrix" prints it) with the golden file at
// path, and fails the test with the difference, so that a change to who
// sees which tool shows in review. If the test binary has a boolean
// -update flag (the service's own, or toolroute's internal one) and it is
// set, CheckVisibility writes the file instead.
func CheckVisibility(tb testing.TB, s *mcp.Server, path string, roles ...string) {
	tb.Helper()
	got := matrixText(VisibilityMatrix(tb, s, roles...))
	if f := flag.Lookup("update"); f != nil && f.Value.String() == "true" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			tb.Fatalf("servertest: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			tb.Fatalf("servertest: %v", err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("servertest: %v (run the test with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		tb.Errorf("servertest: the visibility matrix differs from %s (-golden +server; rerun with -update if the change is intended):\n%s", path, diff)
	}
}

// ToolNames returns the names of the tools cs sees, every page of
// tools/list followed, sorted; never nil. It fails the test if a list
// fails.
func ToolNames(tb testing.TB, cs *mcp.ClientSession) []string {
	tb.Helper()
	names := []string{}
	for t, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			tb.Fatalf("servertest: tools/list: %v", err)
		}
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names
}
