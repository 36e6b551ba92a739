package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// switchable is a policy that can be made to fail (an outage).
type switchable struct {
	*authz.Policy
	down atomic.Bool
}

func (s *switchable) Allow(ctx context.Context, c authz.Caller, r tool.Route) error {
	if s.down.Load() {
		return &authz.OutageError{Err: errors.New("down")}
	}
	return s.Policy.Allow(ctx, c, r)
}

func (s *switchable) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	if s.down.Load() {
		return nil, &authz.OutageError{Err: errors.New("down")}
	}
	return s.Policy.AllowMany(ctx, c, rs)
}

// toolsetServer serves tools tagged a, b, both, none, a local tool
// tagged a and an admin's tool tagged a; role "limited" is limited to
// toolset a, "full" is not; read_a is deprecated in favour of read_b.
func toolsetServer(t *testing.T) (*mcp.Server, *switchable) {
	t.Helper()
	reg := registry.New[lifeDeps]()
	add := func(name, method string, local bool, tags ...string) {
		tl := lifeTool(name, method, nil)
		tl.Tags = tags
		if name == "read_a" {
			tl.Deprecated = &tool.Deprecation{Reason: "slow", Successor: "read_b"}
		}
		if local {
			tl.ServiceKey, tl.VisibilityRoutes, tl.Local = "", nil, true
		}
		reg.Register(tl)
	}
	add("read_a", "GET", false, "a")
	add("read_b", "GET", false, "b")
	add("read_ab", "GET", false, "b", "a")
	add("read_untagged", "GET", false)
	add("local_a", "", true, "a")
	add("local_none", "", true)
	add("admin_a", "POST", false, "a")
	p, err := authz.ParsePolicy([]byte(`[
	 {"role": "limited", "toolsets": ["a"], "accessPolicies": [{"path": "^/s/things$", "methods": ["GET"], "effect": "allow"}]},
	 {"role": "full", "accessPolicies": [{"path": "^/s/things$", "methods": ["GET"], "effect": "allow"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	a := &switchable{Policy: p}
	toolsets := func(_ context.Context, c authz.Caller) ([]string, bool) { return p.Toolsets(c) }
	s, err := server.New(server.Options{Authorizer: a, Toolsets: toolsets}, server.Install(reg, lifeDeps{}))
	if err != nil {
		t.Fatal(err)
	}
	return s, a
}

func listNames(t *testing.T, cs *mcp.ClientSession, meta mcp.Meta) ([]string, error) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Meta: meta})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names, nil
}

// TestToolsetsList: a role's toolsets and a client's hide tools, never
// reveal one: a limited role sees only tools of its tags, a caller with
// an unlimited role too is not limited, a client narrows what its roles
// show and a tag outside them shows nothing more; the successor a
// toolset hides is not named.
func TestToolsetsList(t *testing.T) {
	s, _ := toolsetServer(t)
	meta := func(tags ...any) mcp.Meta { return mcp.Meta{"io.github.toolroute/toolsets": tags} }
	for _, c := range []struct {
		name  string
		roles []string
		meta  mcp.Meta
		want  []string
	}{
		{"full", []string{"full"}, nil, []string{"local_a", "local_none", "read_a", "read_ab", "read_b", "read_untagged"}},
		{"limited", []string{"limited"}, nil, []string{"local_a", "read_a", "read_ab"}},
		{"limited and full", []string{"limited", "full"}, nil, []string{"local_a", "local_none", "read_a", "read_ab", "read_b", "read_untagged"}},
		{"limited and an unknown role", []string{"limited", "nobody"}, nil, []string{"local_a", "read_a", "read_ab"}},
		{"full asks b", []string{"full"}, meta("b"), []string{"read_ab", "read_b"}},
		{"limited asks b", []string{"limited"}, meta("b"), []string{"read_ab"}},
		{"limited asks a tag no tool has", []string{"limited"}, meta("zzz"), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			cs := servertest.Connect(t, s, &authz.Caller{Subject: "x", Roles: c.roles}, servertest.Options{})
			got, err := listNames(t, cs, c.meta)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("visible tools (-want +got):\n%s", diff)
			}
		})
	}

	cs := servertest.Connect(t, s, &authz.Caller{Subject: "x", Roles: []string{"limited"}}, servertest.Options{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "read_a" }); i < 0 || strings.Contains(res.Tools[i].Description, "read_b") {
		t.Errorf("read_a for a caller limited to toolset a: %+v", res.Tools)
	}
}

// TestToolsetHiddenAnswersLikeUnknown: a tool a toolset hides (the
// role's or the client's) answers a call exactly as a name the server
// does not have, whether the authorizer decides or is down; a tool the
// toolsets keep is called.
func TestToolsetHiddenAnswersLikeUnknown(t *testing.T) {
	s, a := toolsetServer(t)
	type answer struct {
		Code    int64
		Message string
		IsError bool
		Text    string
	}
	answerOf := func(cs *mcp.ClientSession, name string, meta mcp.Meta) answer {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}, Meta: meta})
		var ans answer
		if err != nil {
			var we *jsonrpc.Error
			if !errors.As(err, &we) {
				t.Fatalf("%s: %v", name, err)
			}
			ans.Code, ans.Message = we.Code, strings.ReplaceAll(we.Message, name, "NAME")
			return ans
		}
		ans.IsError = res.IsError
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				ans.Text += strings.ReplaceAll(tc.Text, name, "NAME")
			}
		}
		return ans
	}
	limited := servertest.Connect(t, s, &authz.Caller{Subject: "x", Roles: []string{"limited"}}, servertest.Options{})
	full := servertest.Connect(t, s, &authz.Caller{Subject: "y", Roles: []string{"full"}}, servertest.Options{})
	narrowed := mcp.Meta{"io.github.toolroute/toolsets": []any{"a"}}
	for _, down := range []bool{false, true} {
		a.down.Store(down)
		unknown := answerOf(limited, "no_such_tool", nil)
		if down && !(unknown.IsError && unknown.Text == "authorization service unavailable") || !down && unknown.Message != `unknown tool "NAME"` {
			t.Fatalf("down=%v: unknown name answered %+v", down, unknown)
		}
		for _, c := range []struct {
			who  string
			cs   *mcp.ClientSession
			name string
			meta mcp.Meta
		}{
			{"limited role", limited, "read_b", nil},
			{"limited role", limited, "read_untagged", nil},
			{"limited role, local tool", limited, "local_none", nil},
			{"client's toolset", full, "read_b", narrowed},
		} {
			if got := answerOf(c.cs, c.name, c.meta); got != unknown {
				t.Errorf("down=%v, %s: %s answered %+v, an unknown name %+v", down, c.who, c.name, got, unknown)
			}
		}
	}
	a.down.Store(false)
	for _, name := range []string{"read_a", "read_ab", "local_a"} {
		if got := answerOf(limited, name, nil); got.IsError || got.Code != 0 {
			t.Errorf("limited: %s answered %+v", name, got)
		}
	}
	if got := answerOf(full, "read_ab", narrowed); got.IsError || got.Code != 0 {
		t.Errorf("full, narrowed to a: read_ab answered %+v", got)
	}
}

// TestToolsetsHTTPHeader: over HTTP the client narrows with the
// X-MCP-Toolsets header (commas, spaces allowed) as with _meta, the two
// together narrow to both, and malformed toolsets answer a clear
// JSON-RPC error, after which the endpoint serves on.
func TestToolsetsHTTPHeader(t *testing.T) {
	s, _ := toolsetServer(t)
	h, err := server.HTTPHandler(s, server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{
		"tok-full": {Subject: "y", Roles: []string{"full"}},
	})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	connect := func(header string) *mcp.ClientSession {
		hc := servertest.BearerClient("tok-full")
		if header != "" {
			hc.Transport = headerTransport{base: hc.Transport, value: header}
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: ts.URL, HTTPClient: hc, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	got, err := listNames(t, connect(" b , a"), nil)
	if err != nil || !cmp.Equal(got, []string{"local_a", "read_a", "read_ab", "read_b"}) {
		t.Errorf("header b, a: %v %v", got, err)
	}
	got, err = listNames(t, connect("b"), mcp.Meta{"io.github.toolroute/toolsets": []any{"a"}})
	if err != nil || !cmp.Equal(got, []string{"read_ab"}) {
		t.Errorf("header b, _meta a: %v %v", got, err)
	}
	for _, c := range []struct {
		header string
		meta   mcp.Meta
		want   string
	}{
		{"B", nil, `invalid toolsets: the X-MCP-Toolsets header: "B" is not a tag (1 to 64 of a-z 0-9 _ . -, starting with a letter or digit)`},
		{"a,,b", nil, `invalid toolsets: the X-MCP-Toolsets header: "" is not a tag (1 to 64 of a-z 0-9 _ . -, starting with a letter or digit)`},
		{"", mcp.Meta{"io.github.toolroute/toolsets": "a"}, `invalid toolsets: _meta "io.github.toolroute/toolsets" must be a list of tags`},
		{"", mcp.Meta{"io.github.toolroute/toolsets": []any{}}, `invalid toolsets: _meta "io.github.toolroute/toolsets": name at least one tag, or leave it out`},
	} {
		cs := connect(c.header)
		_, err := listNames(t, cs, c.meta)
		var we *jsonrpc.Error
		if !errors.As(err, &we) || we.Code != jsonrpc.CodeInvalidParams || we.Message != c.want {
			t.Errorf("header %q, _meta %v: %v, want -32602 %s", c.header, c.meta, err, c.want)
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "read_b", Arguments: map[string]any{}, Meta: c.meta}); !errors.As(err, &we) || we.Message != c.want {
			t.Errorf("call, header %q, _meta %v: %v, want %s", c.header, c.meta, err, c.want)
		}
	}
	if got, err := listNames(t, connect(""), nil); err != nil || len(got) != 6 {
		t.Errorf("after the malformed requests: %v %v", got, err)
	}
}

// headerTransport adds X-MCP-Toolsets to every request.
type headerTransport struct {
	base  http.RoundTripper
	value string
}

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("X-MCP-Toolsets", h.value)
	return h.base.RoundTrip(r)
}
