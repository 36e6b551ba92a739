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
