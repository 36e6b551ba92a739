package authz_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/tool"
)

func TestParsePolicyErrors(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string // substrings of the error, in order
	}{
		{"syntax", "[\n  {\"role\": \"viewer\",,}\n]", []string{"authz: policy: invalid JSON: line 2, column 21: invalid character ','"}},
		{"type", `[{"role": 1}]`, []string{"authz: policy: invalid JSON: line 1, column 11: json: cannot unmarshal number"}},
		{"not an array", `{"role": "viewer"}`, []string{"authz: policy: invalid JSON:", "cannot unmarshal object"}},
		{"null", `null`, []string{"authz: policy: invalid JSON: want an array of role policies, got null"}},
		{"trailing data", `[] []`, []string{"authz: policy: invalid JSON: data after the array"}},
		{"unknown field", `[{"role": "viewer", "accessPolicy": []}]`, []string{`authz: policy: invalid JSON:`, `unknown field "accessPolicy"`}},
		{"unknown nested field", `[{"role": "viewer", "accessPolicies": [{"path": "^/a$", "methods": ["GET"], "effect": "allow", "effects": "deny"}]}]`, []string{`unknown field "effects"`}},
		{"empty role", `[{"role": "", "accessPolicies": []}]`, []string{`authz: policy: role "" (entry 0): empty role name`}},
		{"duplicate role", `[{"role": "a", "accessPolicies": []}, {"role": "a", "accessPolicies": []}]`, []string{`authz: policy: role "a" (entry 1): duplicate role`}},
		{"bad regexp", `[{"role": "a", "accessPolicies": [{"path": "^/items(", "methods": ["GET"], "effect": "allow"}]}]`,
			[]string{`authz: policy: role "a" (entry 0): accessPolicies[0]: path "^/items(": error parsing regexp: missing closing ): `}},
		{"empty path", `[{"role": "a", "accessPolicies": [{"path": "", "methods": ["GET"], "effect": "allow"}]}]`, []string{`accessPolicies[0]: empty path`}},
		{"unknown effect", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "methods": ["GET"], "effect": "permit"}]}]`,
			[]string{`authz: policy: role "a" (entry 0): accessPolicies[0]: effect "permit": want "allow" or "deny"`}},
		{"missing effect", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "methods": ["GET"]}]}]`, []string{`effect "": want "allow" or "deny"`}},
		{"empty methods", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "methods": [], "effect": "allow"}]}]`,
			[]string{`authz: policy: role "a" (entry 0): accessPolicies[0]: no methods`}},
		{"missing methods", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "effect": "allow"}]}]`, []string{`accessPolicies[0]: no methods`}},
		{"lower-case method", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "methods": ["get"], "effect": "allow"}]}]`, []string{`method "get" is not an upper-case HTTP method`}},
		{"duplicate method", `[{"role": "a", "accessPolicies": [{"path": "^/a$", "methods": ["GET", "GET"], "effect": "allow"}]}]`, []string{`method "GET" listed twice`}},
		{"every problem", `[{"role": "a", "accessPolicies": [{"path": "(", "methods": ["GET"], "effect": "allow"}, {"path": "^/b$", "methods": ["GET"], "effect": "nope"}]}, {"role": "", "accessPolicies": []}]`,
			[]string{`role "a" (entry 0): accessPolicies[0]: path "("`, `role "a" (entry 0): accessPolicies[1]: effect "nope"`, `role "" (entry 1): empty role name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := authz.ParsePolicy([]byte(tt.json))
			if err == nil {
				t.Fatalf("ParsePolicy succeeded: %v", p)
			}
			msg := err.Error()
			rest := msg
			for _, w := range tt.want {
				i := strings.Index(rest, w)
				if i < 0 {
					t.Fatalf("error %q does not hold %q (in order)", msg, w)
				}
				rest = rest[i+len(w):]
			}
		})
	}
}

func TestMustParsePolicyPanics(t *testing.T) {
	got := panicValue(func() { authz.MustParsePolicy([]byte(`[{"role": ""}]`)) })
	if s, _ := got.(string); !strings.HasPrefix(s, "authz: policy: ") {
		t.Errorf("panic = %v", got)
	}
	if p := authz.MustParsePolicy([]byte(`[]`)); p == nil {
		t.Error("MustParsePolicy([]) = nil")
	}
}

func TestPolicyDecisions(t *testing.T) {
	p := testPolicy(t)
	extra := mustPolicy(t, `[
		{"role": "loose", "accessPolicies": [{"path": "/reports", "methods": ["GET"], "effect": "allow"}]},
		{"role": "alt", "accessPolicies": [{"path": "^/a/x$|^/b/", "methods": ["PUT", "PATCH"], "effect": "allow"}]},
		{"role": "ci", "accessPolicies": [{"path": "(?i)^/CATALOG/api/v1/items$", "methods": ["HEAD"], "effect": "allow"}]},
		{"role": "nested", "accessPolicies": [
			{"path": "^/n/", "methods": ["GET"], "effect": "allow"},
			{"path": "^/n/a", "methods": ["GET"], "effect": "allow"},
			{"path": "^/n/ab$", "methods": ["GET"], "effect": "deny"},
			{"path": "^/n/abc", "methods": ["GET"], "effect": "allow"},
			{"path": "^/m", "methods": ["GET"], "effect": "allow"},
			{"path": "private", "methods": ["GET"], "effect": "deny"}
		]}
	]`)
	tests := []struct {
		p      *authz.Policy
		roles  []string
		method string
		uri    string
		want   bool
	}{
		{p, []string{"viewer"}, "GET", "/catalog/api/v1/items", true},
		{p, []string{"viewer"}, "GET", "/catalog/api/v1/items/{id}", true},
		{p, []string{"viewer"}, "GET", "/catalog/api/v1/items/42", true},
		{p, []string{"viewer"}, "GET", "/catalog/api/v1/items/forbidden", false}, // deny overrides allow
		{p, []string{"viewer"}, "GET", "/catalog/api/v1/items/42/x", false},
		{p, []string{"viewer"}, "POST", "/catalog/api/v1/items", false},
		{p, []string{"viewer"}, "get", "/catalog/api/v1/items", false},
		{p, []string{"editor"}, "GET", "/catalog/api/v1/items", false},                    // the role's own deny
		{p, []string{"editor", "viewer"}, "GET", "/catalog/api/v1/items", true},           // union
		{p, []string{"viewer", "editor"}, "GET", "/catalog/api/v1/items/forbidden", true}, // union
		{p, []string{"nobody"}, "GET", "/catalog/api/v1/items", false},
		{p, []string{"nobody", "viewer"}, "GET", "/catalog/api/v1/items", true},
		{p, []string{"ghost"}, "GET", "/catalog/api/v1/items", false},
		{p, nil, "GET", "/catalog/api/v1/items", false},
		{extra, []string{"loose"}, "GET", "/anything/reports/x", true}, // unanchored, as the proxy
		{extra, []string{"loose"}, "GET", "/anything/report", false},
		{extra, []string{"alt"}, "PUT", "/a/x", true},
		{extra, []string{"alt"}, "PATCH", "/b/y", true},
		{extra, []string{"alt"}, "PUT", "/a/xy", false},
		{extra, []string{"alt"}, "PUT", "/c/a/x", false},
		{extra, []string{"ci"}, "HEAD", "/catalog/API/v1/ITEMS", true},
		{extra, []string{"nested"}, "GET", "/n/", true},
		{extra, []string{"nested"}, "GET", "/n/ab", false},
		{extra, []string{"nested"}, "GET", "/n/abc", true},
		{extra, []string{"nested"}, "GET", "/n/abd", true},
		{extra, []string{"nested"}, "GET", "/n/a/private", false},
		{extra, []string{"nested"}, "GET", "/mx", true},
		{extra, []string{"nested"}, "GET", "/x", false},
	}
	for _, tt := range tests {
		c := authz.Caller{Subject: "s", Roles: tt.roles}
		r := tool.Route{URI: tt.uri, Method: tt.method}
		err := tt.p.Allow(context.Background(), c, r)
		if got := err == nil; got != tt.want {
			t.Errorf("%v %s: allowed = %v, want %v (%v)", tt.roles, r, got, tt.want, err)
		}
		if err != nil {
			if d, ok := err.(*authz.DeniedError); !ok || d.Route != r || d.Subject != "s" {
				t.Errorf("%v %s: error %#v", tt.roles, r, err)
			}
		}
		many, err := tt.p.AllowMany(context.Background(), c, []tool.Route{r, r})
		if err != nil || len(many) != 2 || many[0] != tt.want || many[1] != tt.want {
			t.Errorf("%v %s: AllowMany = %v, %v", tt.roles, r, many, err)
		}
	}
}

func TestPolicyUnauthenticated(t *testing.T) {
	p := testPolicy(t)
	r := catalog("GET", "/api/v1/items")
	if err := p.Allow(context.Background(), authz.Caller{Bearer: "x"}, r); errKind(err) != "unauthenticated" {
		t.Errorf("Allow(no subject, no roles) = %v", err)
	}
	if _, err := p.AllowMany(context.Background(), authz.Caller{}, []tool.Route{r}); errKind(err) != "unauthenticated" {
		t.Errorf("AllowMany(zero caller) = %v", err)
	}
	if err := p.Allow(context.Background(), authz.Caller{Subject: "bob"}, r); errKind(err) != "deny" {
		t.Errorf("Allow(subject, no roles) = %v", err)
	}
}

func TestAllowAll(t *testing.T) {
	a := authz.AllowAll()
	if err := a.Allow(context.Background(), authz.Caller{}, catalog("DELETE", "/x")); err != nil {
		t.Error(err)
	}
	got, err := a.AllowMany(context.Background(), authz.Caller{}, []tool.Route{catalog("GET", "/a"), catalog("GET", "/b")})
	if err != nil || !cmp.Equal(got, []bool{true, true}) {
		t.Errorf("AllowMany = %v, %v", got, err)
	}
}

// goldenRoutes are the routes of the test service's read-only tools.
var goldenRoutes = []tool.Route{
	catalog("GET", "/api/v1/items/{id}"),
	catalog("GET", "/api/v1/items"),
	catalog("HEAD", "/api/v1/items"),
	catalog("GET", "/api/v1/reports"),
	catalog("GET", "/api/v1/items"), // duplicate
	catalog("GET", "/api/v1/items/{id}/tags/{tag}"),
	catalog("GET", "/api/v1.2/a+b(c)"),
	tool.ServiceRoute("orders", "GET", "/api/orders/{order_id}"),
}

func TestRolePolicyForGolden(t *testing.T) {
	got, err := json.MarshalIndent([]authz.RolePolicy{authz.RolePolicyFor("viewer", goldenRoutes)}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	golden.Check(t, "testdata/rolepolicy_viewer.golden.json", got)
	// The order of the routes does not matter.
	rev := append([]tool.Route(nil), goldenRoutes...)
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	if diff := cmp.Diff(authz.RolePolicyFor("viewer", goldenRoutes), authz.RolePolicyFor("viewer", rev)); diff != "" {
		t.Errorf("RolePolicyFor depends on the order of routes:\n%s", diff)
	}
	if got := authz.RolePolicyFor("none", nil); got.AccessPolicies == nil {
		t.Error("RolePolicyFor(nil).AccessPolicies is nil: it would marshal as null")
	}
}

// A policy from RolePolicyFor allows exactly its routes: their templates,
// their bindings, and nothing else.
func TestRolePolicyForAllowsExactlyItsRoutes(t *testing.T) {
	data, err := json.Marshal([]authz.RolePolicy{authz.RolePolicyFor("viewer", goldenRoutes)})
	if err != nil {
		t.Fatal(err)
	}
	p := mustPolicy(t, string(data))
	c := authz.Caller{Subject: "v", Roles: []string{"viewer"}}
	allowed := func(method, uri string) bool {
		return p.Allow(context.Background(), c, tool.Route{URI: uri, Method: method}) == nil
	}
	for _, r := range goldenRoutes {
		if !allowed(r.Method, r.URI) {
			t.Errorf("template %s denied", r)
		}
		values := map[string]string{}
		for _, name := range r.Placeholders() {
			values[name] = "x y;z%" // escaped: one segment
		}
		b, err := r.Bind(values)
		if err != nil {
			t.Fatal(err)
		}
		if !allowed(b.Method, b.URI) {
			t.Errorf("binding %s denied", b)
		}
	}
	for _, r := range []tool.Route{
		catalog("POST", "/api/v1/items"),
		catalog("GET", "/api/v1/items/1/2"),
		catalog("GET", "/api/v1/items/"),
		catalog("GET", "/api/v1/itemsX"),
		catalog("GET", "/api/v1/items/1/tags"),
		catalog("GET", "/api/v1x2/a+b(c)"),
		catalog("GET", "/api/v1.2/aab(c)"),
		catalog("GET", "/x/api/v1/items"),
		tool.ServiceRoute("orders", "GET", "/api/orders"),
		{URI: "/prefix/catalog/api/v1/items", Method: "GET"},
	} {
		if allowed(r.Method, r.URI) {
			t.Errorf("%s allowed", r)
		}
	}
}

// FuzzPolicyMatcher checks the indexed matcher of Policy against the plain
// reading of the rules: a route is allowed iff some rule of the method
// allows it by regexp.MatchString and none denies it.
func FuzzPolicyMatcher(f *testing.F) {
	seeds := [][5]string{
		{"^/catalog/api/v1/items(/[^/]+)?$", "^/catalog/api/v1/items/forbidden$", "^/catalog/", "/catalog/api/v1/items/forbidden", "GET"},
		{"^/a", "^/ab", "^/abc$", "/abc", "GET"},
		{"items", "^/items$", "(?i)^/ITEMS", "/Items", "POST"},
		{"^/a$|^/b", "^(/c|/d)", "^$", "/d/x", "PUT"},
		{"^/x/y", "^/x", "^/x/y/z", "/x/y/z", "DELETE"},
		{"\\A/a", "(?m)^/b", "/c$", "/q\n/b", "GET"},
		{"^/é", "^/é/ü", "ü", "/é/ü", "GET"},
		{"^/a/[^/]+$", "^/a/[^/]+/b(/[^/]+)?$", "^/a/x$", "/a/x/b", "GET"},
		{"^/(items|products)(/[^/]+)?$", "^[^/]+/x$", "^/a//[^/]+$", "/products/", "POST"},
		{"^/a/[^/]+x$", "^/a/x[^/]+$", "^/a/([^/]+)?$", "/a/", "GET"},
		{`^/\x{FFFD}/[^/]+$`, "^/a/[^/]+$|^/b$", "^(/a)?/[^/]+$", "/\xff/\n", "GET"},
		{"^$", "^/$", "^/[^/]+/[^/]+/[^/]+$", "//", "GET"},
	}
	for _, s := range seeds {
		for effects := range uint8(8) {
			f.Add(s[0], s[1], s[2], effects, s[3], s[4])
		}
	}
	f.Fuzz(func(t *testing.T, p0, p1, p2 string, effects uint8, uri, method string) {
		patterns := []string{p0, p1, p2}
		var res []*regexp.Regexp
		var aps []authz.AccessPolicy
		for i, pat := range patterns {
			re, err := regexp.Compile(pat)
			if err != nil || pat == "" {
				return
			}
			res = append(res, re)
			effect := authz.Allow
			if effects&(1<<i) != 0 {
				effect = authz.Deny
			}
			aps = append(aps, authz.AccessPolicy{Path: pat, Methods: []string{"GET", "POST"}, Effect: effect})
		}
		p, err := authz.NewPolicy([]authz.RolePolicy{{Role: "r", AccessPolicies: aps}})
		if err != nil {
			t.Fatal(err)
		}
		want := false
		if method == "GET" || method == "POST" {
			for i, re := range res {
				if re.MatchString(uri) {
					if aps[i].Effect == authz.Deny {
						want = false
						break
					}
					want = true
				}
			}
		}
		got := p.Allow(context.Background(), authz.Caller{Roles: []string{"r"}}, tool.Route{URI: uri, Method: method}) == nil
		if got != want {
			t.Fatalf("patterns %q effects %03b: %s %q allowed = %v, want %v", patterns, effects, method, uri, got, want)
		}
	})
}

// FuzzRouteMatchAndPolicy checks tool.Route.Match, Bind and RolePolicyFor
// together: a concrete path Match accepts fills each placeholder with
// exactly one segment that is not a dot segment, and RolePolicyFor allows
// it; any bound value stays in its segment.
func FuzzRouteMatchAndPolicy(f *testing.F) {
	for _, s := range []string{"42", "..", ".", "%2e%2E", "a%2Fb", "a/b", "", "a b", "%zz", "x/../../admin", "%2F", "{id}", "é"} {
		f.Add(s, "/catalog/api/v1/items/"+s+"/tags/red")
	}
	tmpl := catalog("GET", "/api/v1/items/{id}/tags/{tag}")
	data, _ := json.Marshal([]authz.RolePolicy{authz.RolePolicyFor("r", []tool.Route{tmpl})})
	p, err := authz.ParsePolicy(data)
	if err != nil {
		f.Fatal(err)
	}
	c := authz.Caller{Roles: []string{"r"}}
	f.Fuzz(func(t *testing.T, value, path string) {
		if tmpl.Match("GET", path) {
			segs := strings.Split(path, "/")
			if len(segs) != 8 || strings.Join(segs[:5], "/") != "/catalog/api/v1/items" || segs[6] != "tags" {
				t.Fatalf("Match accepted %q", path)
			}
			for _, s := range []string{segs[5], segs[7]} {
				if s == "" || s == "." || s == ".." || strings.EqualFold(s, "%2e") || strings.EqualFold(s, "%2e%2e") || strings.EqualFold(s, ".%2e") || strings.EqualFold(s, "%2e.") {
					t.Fatalf("Match accepted %q with segment %q", path, s)
				}
			}
			if p.Allow(context.Background(), c, tool.Route{URI: path, Method: "GET"}) != nil {
				t.Fatalf("RolePolicyFor denies %q, which Match accepts", path)
			}
		}
		b, err := tmpl.Bind(map[string]string{"id": value, "tag": "t"})
		if err != nil {
			return
		}
		if !tmpl.Match(b.Method, b.URI) {
			t.Fatalf("Bind(%q) = %q, which Match refuses", value, b.URI)
		}
		if got := strings.Count(b.URI, "/"); got != 7 {
			t.Fatalf("Bind(%q) = %q: %d segments", value, b.URI, got)
		}
		if p.Allow(context.Background(), c, b) != nil {
			t.Fatalf("RolePolicyFor denies the binding %q", b.URI)
		}
	})
}

func TestPolicyRoles(t *testing.T) {
	for _, tt := range []struct {
		policy string
		want   []string
	}{
		{`[]`, nil},
		{`[{"role": "viewer", "accessPolicies": []}]`, []string{"viewer"}},
		{`[{"role": "viewer", "accessPolicies": []}, {"role": "admin", "accessPolicies": [{"path": "^/", "methods": ["GET"], "effect": "deny"}]}]`, []string{"admin", "viewer"}},
	} {
		p, err := authz.ParsePolicy([]byte(tt.policy))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, p.Roles()); diff != "" {
			t.Errorf("%s: Roles() (-want +got):\n%s", tt.policy, diff)
		}
	}
}
