package export_test

import (
	"bytes"
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/toolroute/toolroute/tool"
)

// opa is the exported Rego module, prepared by OPA as Rego v1 in strict
// mode (unused variables, imports and arguments, deprecated built-ins
// are errors).
type opa struct {
	allow, tools rego.PreparedEvalQuery
}

func newOPA(tb testing.TB, f *fixture) *opa {
	tb.Helper()
	var buf bytes.Buffer
	if err := f.exp.Rego(&buf); err != nil {
		tb.Fatal(err)
	}
	prepare := func(query string) rego.PreparedEvalQuery {
		pq, err := rego.New(
			rego.Query(query),
			rego.Module("toolroute.rego", buf.String()),
			rego.SetRegoVersion(ast.RegoV1),
			rego.StrictBuiltinErrors(true),
			rego.Strict(true),
		).PrepareForEval(context.Background())
		if err != nil {
			tb.Fatalf("%s: OPA refuses the module: %v\n%s", f.name, err, buf.String())
		}
		return pq
	}
	return &opa{allow: prepare("data.toolroute.authz.allow"), tools: prepare("data.toolroute.authz.tools")}
}

func regoInput(roles []string, method, path string) ast.Value {
	rs := make([]*ast.Term, len(roles))
	for i, r := range roles {
		rs[i] = ast.StringTerm(r)
	}
	return ast.NewObject(
		ast.Item(ast.StringTerm("roles"), ast.ArrayTerm(rs...)),
		ast.Item(ast.StringTerm("method"), ast.StringTerm(method)),
		ast.Item(ast.StringTerm("path"), ast.StringTerm(path)),
	)
}

func (o *opa) decide(tb testing.TB, roles []string, method, path string) bool {
	rs, err := o.allow.Eval(context.Background(), rego.EvalParsedInput(regoInput(roles, method, path)))
	if err != nil {
		tb.Fatalf("OPA: allow for %q %s %q: %v", roles, method, path, err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		tb.Fatalf("OPA: allow for %q %s %q: result %v, want one (allow has a default)", roles, method, path, rs)
	}
	b, ok := rs[0].Expressions[0].Value.(bool)
	if !ok {
		tb.Fatalf("OPA: allow is %v, not a boolean", rs[0].Expressions[0].Value)
	}
	return b
}

func (o *opa) visible(tb testing.TB, roles []string) []string {
	rs, err := o.tools.Eval(context.Background(), rego.EvalParsedInput(regoInput(roles, "", "")))
	if err != nil {
		tb.Fatalf("OPA: tools for %q: %v", roles, err)
	}
	names := []string{}
	if len(rs) == 1 {
		for _, v := range rs[0].Expressions[0].Value.([]any) {
			names = append(names, v.(string))
		}
	}
	slices.Sort(names)
	return names
}

// TestRegoDifferential: OPA, evaluating the exported module, decides
// every role × route of the table, and 10,000 random probes (roles,
// method, escaped path, traversal-shaped and percent-encoded ones
// included), exactly as authz.Policy does; and its tools set is what a
// real client of the real server lists, for every role set.
func TestRegoDifferential(t *testing.T) {
	for _, f := range fixtures(t) {
		t.Run(f.name, func(t *testing.T) {
			o := newOPA(t, f)
			routes := f.routes()
			for _, set := range f.roleSets() {
				for _, r := range routes {
					if got, want := o.decide(t, set, r.Method, r.URI), f.allows(set, r.Method, r.URI); got != want {
						t.Errorf("roles %q, %s: OPA allow %v, Policy %v", set, r, got, want)
					}
				}
				if diff := cmp.Diff(f.visible(t, set), o.visible(t, set)); diff != "" {
					t.Errorf("roles %q: tools (-toolroute +OPA):\n%s", set, diff)
				}
			}
			f.runProbes(t, 1, "OPA", func(_ *rand.Rand, p probe) (bool, bool) {
				return o.decide(t, p.roles, p.method, p.path), f.allows(p.roles, p.method, p.path)
			})
		})
	}
}

// TestRegoInputFailsClosed: inputs of the wrong shape allow nothing.
func TestRegoInputFailsClosed(t *testing.T) {
	f := fixtures(t)[0]
	o := newOPA(t, f)
	r := tool.Route{URI: "/catalog/api/v1/items", Method: "GET"}
	if !o.decide(t, []string{"admin"}, r.Method, r.URI) {
		t.Fatal("admin may not list items: the test proves nothing")
	}
	for name, in := range map[string]ast.Value{
		"roles a string": ast.NewObject(ast.Item(ast.StringTerm("roles"), ast.StringTerm("admin")),
			ast.Item(ast.StringTerm("method"), ast.StringTerm(r.Method)), ast.Item(ast.StringTerm("path"), ast.StringTerm(r.URI))),
		"roles an object": ast.NewObject(ast.Item(ast.StringTerm("roles"), ast.ObjectTerm(ast.Item(ast.StringTerm("x"), ast.StringTerm("admin")))),
			ast.Item(ast.StringTerm("method"), ast.StringTerm(r.Method)), ast.Item(ast.StringTerm("path"), ast.StringTerm(r.URI))),
		"no path": ast.NewObject(ast.Item(ast.StringTerm("roles"), ast.ArrayTerm(ast.StringTerm("admin"))),
			ast.Item(ast.StringTerm("method"), ast.StringTerm(r.Method))),
		"no input": nil,
	} {
		opts := []rego.EvalOption{}
		if in != nil {
			opts = append(opts, rego.EvalParsedInput(in))
		}
		rs, err := o.allow.Eval(context.Background(), opts...)
		if err != nil || len(rs) != 1 || rs[0].Expressions[0].Value != false {
			t.Errorf("%s: allow %v, %v; want false", name, rs, err)
		}
	}
}
