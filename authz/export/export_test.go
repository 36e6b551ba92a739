package export_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/cedar-policy/cedar-go"
	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// TestNewRefuses: New refuses what authz.NewPolicy refuses, with the
// package's prefix, and a role name that is not UTF-8.
func TestNewRefuses(t *testing.T) {
	for name, c := range map[string]struct {
		roles []authz.RolePolicy
		want  string
	}{
		"bad regexp": {[]authz.RolePolicy{{Role: "r", AccessPolicies: []authz.AccessPolicy{{Path: "(", Methods: []string{"GET"}, Effect: "allow"}}}}, "export: authz: policy"},
		"duplicate":  {[]authz.RolePolicy{{Role: "r"}, {Role: "r"}}, "duplicate role"},
		"not UTF-8":  {[]authz.RolePolicy{{Role: "r\xff"}}, "not valid UTF-8"},
	} {
		if _, err := export.New(registry.RouteTable{}, c.roles); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

// TestWrite: every format of Formats is written; the JSON one is the
// route table unchanged; an unknown format is an error naming them all.
func TestWrite(t *testing.T) {
	f := fixtures(t)[0]
	for _, format := range export.Formats {
		var buf bytes.Buffer
		if err := f.exp.Write(&buf, format, export.Options{}); err != nil || buf.Len() == 0 {
			t.Errorf("%s: %v, %d bytes", format, err, buf.Len())
		}
		if format == export.FormatJSON {
			var back registry.RouteTable
			if err := json.Unmarshal(buf.Bytes(), &back); err != nil || !cmp.Equal(f.table, back) {
				t.Errorf("json: %v (-table +written):\n%s", err, cmp.Diff(f.table, back))
			}
		}
	}
	err := f.exp.Write(new(bytes.Buffer), "xacml", export.Options{})
	if err == nil || !strings.Contains(err.Error(), `"xacml"`) || !strings.Contains(err.Error(), strings.Join(export.Formats, ", ")) {
		t.Errorf("unknown format: %v", err)
	}
}

// TestCedarQuoting: role and route names holding what a Cedar string
// must escape (quotes, backslashes, line breaks, tabs, line separators)
// reach cedar-go intact: it decides them as toolroute does.
func TestCedarQuoting(t *testing.T) {
	roles := []string{"line\nbreak", `back\slash "q"`, "tab\t\u2028\u0085", "plain"}
	var rps []authz.RolePolicy
	for _, r := range roles[:3] {
		rps = append(rps, authz.RolePolicy{Role: r, AccessPolicies: []authz.AccessPolicy{{Path: "^/s/a'b$", Methods: []string{"GET"}, Effect: "allow"}}})
	}
	rps = append(rps, authz.RolePolicy{Role: "plain"})
	table := registry.RouteTable{Tools: []registry.RouteTableEntry{{Name: "t", ServiceKey: "s", Routes: []tool.Route{{URI: "/s/a'b", Method: "GET"}}}}}
	e := newExporter(t, table, rps)
	var buf bytes.Buffer
	if err := e.Cedar(&buf); err != nil {
		t.Fatal(err)
	}
	ps, err := cedar.NewPolicySetFromBytes("q.cedar", buf.Bytes())
	if err != nil {
		t.Fatalf("cedar-go: %v\n%s", err, buf.String())
	}
	c := &cedarEngine{ps: ps}
	for _, r := range roles {
		want := r != "plain"
		if got := c.decide([]string{r}, "GET", "Route", "/s/a'b"); got != want {
			t.Errorf("role %q: Cedar %v, want %v", r, got, want)
		}
		if got := c.decide([]string{r}, "call_tool", "Tool", "t"); got != want {
			t.Errorf("role %q: call_tool %v, want %v", r, got, want)
		}
	}
}

// TestNewCopies: changing the table or the policies after New changes
// nothing New returned.
func TestNewCopies(t *testing.T) {
	table := registry.RouteTable{Tools: []registry.RouteTableEntry{{Name: "t", ServiceKey: "s", Routes: []tool.Route{{URI: "/s/a", Method: "GET"}}}}}
	roles := []authz.RolePolicy{{Role: "r", AccessPolicies: []authz.AccessPolicy{{Path: "^/s/a$", Methods: []string{"GET"}, Effect: "allow"}}}}
	e := newExporter(t, table, roles)
	var before bytes.Buffer
	if err := e.Rego(&before); err != nil {
		t.Fatal(err)
	}
	table.Tools[0].Routes[0].URI = "/s/b"
	roles[0].AccessPolicies[0].Methods[0] = "POST"
	roles[0].Role = "x"
	var after bytes.Buffer
	if err := e.Rego(&after); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before.String(), after.String()); diff != "" {
		t.Errorf("the export changed with its inputs (-before +after):\n%s", diff)
	}
}
