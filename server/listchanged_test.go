package server_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/reload"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

// changes counts a client's notifications/tools/list_changed.
type changes struct {
	mu sync.Mutex
	n  int
}

func (c *changes) handler(context.Context, *mcp.ToolListChangedRequest) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *changes) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func names(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

// TestNotifyListChanged: after a policy swap, NotifyListChanged tells
// exactly the listeners whose visible tools changed — alice's
// 2026-07-28 subscriptions/listen stream over stateless HTTP and her 2025
// in-memory session — and not bob, whose tools did not change; the
// notification names no tool; alice's client, which kept her list for
// its ttlMs of an hour, fetches it again and no longer sees get_1. A
// second NotifyListChanged without a change tells nobody.
func TestNotifyListChanged(t *testing.T) {
	alice := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	bob := authz.Caller{Subject: "bob", Roles: []string{"deleter"}}
	policy := func(readerPath string) authz.Authorizer {
		p, err := authz.NewPolicy([]authz.RolePolicy{
			{Role: "reader", AccessPolicies: []authz.AccessPolicy{{Path: readerPath, Methods: []string{http.MethodGet}, Effect: authz.Allow}}},
			{Role: "deleter", AccessPolicies: []authz.AccessPolicy{{Path: "^/svc/a/", Methods: []string{http.MethodDelete}, Effect: authz.Allow}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rel := reload.New(policy("^/svc/a/"))
	s, err := server.New(server.Options{Authorizer: rel, Logger: discardLogger, ListChanged: true, ListTTL: time.Hour, Observers: []mcp.Middleware{rel.Middleware()}},
		server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"alice": alice, "bob": bob})}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hs.Handler())
	t.Cleanup(ts.Close) // after the clients' cleanups: their listen streams end first

	var atAlice, atAlice2025, atBob changes
	var wire syncbuf.Buffer
	aliceCS := servertest.ConnectHTTP(t, ts.URL+"/mcp", "alice", servertest.Options{Client: mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: atAlice.handler})})
	bobCS := servertest.ConnectHTTP(t, ts.URL+"/mcp", "bob", servertest.Options{Client: mcp.NewClient(&mcp.Implementation{Name: "b", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: atBob.handler})})
	legacy := mcptest.Connect(t, s, &mcptest.Options{
		Client:        mcp.NewClient(&mcp.Implementation{Name: "a2025", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: atAlice2025.handler}),
		Session:       &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"},
		ServerContext: authz.WithCaller(context.Background(), alice),
		Transport:     func(t mcp.Transport) mcp.Transport { return &mcp.LoggingTransport{Transport: t, Writer: &wire} },
	})
	waitFor(t, "three listeners", func() bool { return server.ListenersForTest(s) == 3 })
	before := names(t, aliceCS)
	if !slices.Contains(before, "get_1") || len(names(t, bobCS)) != 2 { // hidden, local_echo
		t.Fatalf("at start alice lists %q, bob %q", before, names(t, bobCS))
	}
	names(t, legacy)

	rel.Swap(policy("^/svc/a/[02]/")) // reader loses get_1; deleter keeps its tools
	if n := server.NotifyListChanged(context.Background(), s); n != 2 {
		t.Errorf("NotifyListChanged told %d listeners, want 2 (alice's two)", n)
	}
	waitFor(t, "alice's notifications", func() bool { return atAlice.count() == 1 && atAlice2025.count() == 1 })
	if got := names(t, aliceCS); slices.Contains(got, "get_1") || len(got) != len(before)-1 {
		t.Errorf("alice lists %q after the notification, want %q without get_1 (her client kept the list for its ttlMs until told)", got, before)
	}
	if n := server.NotifyListChanged(context.Background(), s); n != 0 {
		t.Errorf("NotifyListChanged without a change told %d listeners", n)
	}
	// bob's stream is open (he is a listener) and got nothing.
	if atBob.count() != 0 {
		t.Errorf("bob, whose tools did not change, was told %d times", atBob.count())
	}
	for line := range strings.SplitSeq(wire.String(), "\n") {
		if strings.Contains(line, "list_changed") && (strings.Contains(line, "get_") || strings.Contains(line, "hidden")) {
			t.Errorf("a list_changed notification names a tool: %s", line)
		}
	}
	if !bytes.Contains([]byte(wire.String()), []byte("notifications/tools/list_changed")) {
		t.Errorf("the 2025 session's wire shows no list_changed:\n%s", &wire)
	}
}

// TestListChangedOff: without Options.ListChanged the server advertises
// no listChanged, and NotifyListChanged tells nobody.
func TestListChangedOff(t *testing.T) {
	caller := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	s, err := server.New(server.Options{Authorizer: listPolicy(t), Logger: discardLogger, Caller: &caller}, server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	var got changes
	cs := mcptest.Connect(t, s, &mcptest.Options{Client: mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: got.handler})})
	if caps := cs.InitializeResult().Capabilities; caps.Tools == nil || caps.Tools.ListChanged {
		t.Errorf("capabilities %+v, want tools without listChanged", caps.Tools)
	}
	if n := server.NotifyListChanged(context.Background(), s); n != 0 {
		t.Errorf("NotifyListChanged = %d, want 0", n)
	}
}

// TestListenersEnd: listeners leave when their stream or session ends:
// a 2025 client over stateless HTTP (whose initialize's session ends
// with its POST: it has no stream to be told on), a 2026 listen stream
// when its client closes, a 2025 in-memory session when it closes.
func TestListenersEnd(t *testing.T) {
	alice := authz.Caller{Subject: "alice", Roles: []string{"reader"}}
	s, err := server.New(server.Options{Authorizer: listPolicy(t), Logger: discardLogger, ListChanged: true}, server.Install(listRegistry(), struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"alice": alice})}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hs.Handler())
	t.Cleanup(ts.Close)
	var ignored changes
	client := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: ignored.handler})
	old := servertest.ConnectHTTP(t, ts.URL+"/mcp", "alice", servertest.Options{Client: client, ProtocolVersion: "2025-11-25"})
	names(t, old)
	waitFor(t, "no listener of stateless 2025", func() bool { return server.ListenersForTest(s) == 0 })

	cs := servertest.ConnectHTTP(t, ts.URL+"/mcp", "alice", servertest.Options{Client: client})
	waitFor(t, "the 2026 listener", func() bool { return server.ListenersForTest(s) == 1 })
	cs.Close()
	waitFor(t, "the 2026 listener's end", func() bool { return server.ListenersForTest(s) == 0 })

	mem := mcptest.Connect(t, s, &mcptest.Options{Client: client, Session: &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}, ServerContext: authz.WithCaller(context.Background(), alice)})
	waitFor(t, "the 2025 session", func() bool { return server.ListenersForTest(s) == 1 })
	mem.Close()
	waitFor(t, "the 2025 session's end", func() bool { return server.ListenersForTest(s) == 0 })
}

// TestNotifyListChangedToolsets: a policy swap that changes only a
// role's toolsets tells the role's listeners, whose visible tools it
// changes as tools/list shows them, and not a caller whose role it does
// not limit; a swap whose toolsets add a tag no tool carries tells
// nobody.
func TestNotifyListChangedToolsets(t *testing.T) {
	reg := registry.New[lifeDeps]()
	add := func(name string, local bool, tags ...string) {
		tl := lifeTool(name, "GET", nil)
		tl.Tags = tags
		if local {
			tl.ServiceKey, tl.VisibilityRoutes, tl.Local = "", nil, true
		}
		reg.Register(tl)
	}
	add("read_a", false, "a")
	add("read_b", false, "b")
	add("read_untagged", false)
	add("local_a", true, "a")
	policy := func(toolsets string) *authz.Policy {
		p, err := authz.ParsePolicy([]byte(`[
		 {"role": "limited", ` + toolsets + ` "accessPolicies": [{"path": "^/s/things$", "methods": ["GET"], "effect": "allow"}]},
		 {"role": "full", "accessPolicies": [{"path": "^/s/things$", "methods": ["GET"], "effect": "allow"}]}]`))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	rel := reload.New(policy(`"toolsets": ["a"],`))
	toolsets := func(ctx context.Context, c authz.Caller) ([]string, bool) {
		p, ok := rel.At(ctx).(*authz.Policy)
		if !ok {
			return nil, true
		}
		return p.Toolsets(c)
	}
	s, err := server.New(server.Options{Authorizer: rel, Toolsets: toolsets, Logger: discardLogger, ListChanged: true, Observers: []mcp.Middleware{rel.Middleware()}},
		server.Install(reg, lifeDeps{}))
	if err != nil {
		t.Fatal(err)
	}
	connect := func(c authz.Caller, at *changes) *mcp.ClientSession {
		return mcptest.Connect(t, s, &mcptest.Options{
			Client:        mcp.NewClient(&mcp.Implementation{Name: c.Subject, Version: "1"}, &mcp.ClientOptions{ToolListChangedHandler: at.handler}),
			Session:       &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"},
			ServerContext: authz.WithCaller(context.Background(), c),
		})
	}
	var atAlice, atBob changes
	alice := connect(authz.Caller{Subject: "alice", Roles: []string{"limited"}}, &atAlice)
	bob := connect(authz.Caller{Subject: "bob", Roles: []string{"full"}}, &atBob)
	waitFor(t, "two listeners", func() bool { return server.ListenersForTest(s) == 2 })
	if got, want := names(t, alice), []string{"local_a", "read_a"}; !slices.Equal(got, want) {
		t.Fatalf("alice lists %q at start, want %q", got, want)
	}
	bobSees := names(t, bob)

	rel.Swap(policy(`"toolsets": ["a", "b"],`)) // the routes are the same: only the toolsets changed
	if n := server.NotifyListChanged(context.Background(), s); n != 1 {
		t.Errorf("NotifyListChanged after alice's role gained toolset b told %d listeners, want 1 (alice)", n)
	}
	waitFor(t, "alice's notification", func() bool { return atAlice.count() == 1 })
	if got, want := names(t, alice), []string{"local_a", "read_a", "read_b"}; !slices.Equal(got, want) {
		t.Errorf("alice lists %q after the notification, want %q", got, want)
	}

	rel.Swap(policy(`"toolsets": ["a", "b", "c"],`)) // no tool carries c
	if n := server.NotifyListChanged(context.Background(), s); n != 0 {
		t.Errorf("NotifyListChanged after a toolset no tool is in told %d listeners, want 0", n)
	}

	rel.Swap(policy(``)) // limited is limited no more
	if n := server.NotifyListChanged(context.Background(), s); n != 1 {
		t.Errorf("NotifyListChanged after alice's role lost its toolsets told %d listeners, want 1 (alice)", n)
	}
	waitFor(t, "alice's second notification", func() bool { return atAlice.count() == 2 })
	if got := names(t, alice); !slices.Equal(got, bobSees) {
		t.Errorf("alice lists %q once her role is not limited, want what bob sees, %q", got, bobSees)
	}
	if atBob.count() != 0 || !slices.Equal(names(t, bob), bobSees) {
		t.Errorf("bob, whose role no toolset limits, was told %d times and lists %q (was %q)", atBob.count(), names(t, bob), bobSees)
	}
}
