package servertest

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
)

// VisibilityMatrix connects one client to s per role, as a caller with
// that one role (subject "servertest:ROLE"), and returns what each lists
// in tools/list: the role × tool visibility matrix as the server decides
// it. Its tools are those some role sees.
func VisibilityMatrix(tb testing.TB, s *mcp.Server, roles ...string) authz.Matrix {
	tb.Helper()
	m := authz.Matrix{Roles: slices.Sorted(slices.Values(roles)), Tools: []string{}, Visible: make(map[string][]string, len(roles))}
	m.Roles = slices.Compact(m.Roles)
	for _, role := range m.Roles {
		cs := Connect(tb, s, &authz.Caller{Subject: "servertest:" + role, Roles: []string{role}}, Options{})
		names := ToolNames(tb, cs)
		m.Visible[role] = names
		m.Tools = append(m.Tools, names...)
	}
	slices.Sort(m.Tools)
	m.Tools = slices.Compact(m.Tools)
	return m
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
	got := VisibilityMatrix(tb, s, roles...).Text()
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
