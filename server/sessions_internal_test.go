package server

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
)

// TestSessionsBounded: the stateful handler remembers the sessions it
// opened so that Shutdown can close them; sessions that ended without it
// (DELETE here, idle expiry likewise) are dropped, so what it remembers
// stays proportional to the live sessions, and closeAll closes exactly
// those.
func TestSessionsBounded(t *testing.T) {
	s, err := New(Options{Authorizer: authz.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	h, open, err := newHTTPHandler(s, HTTPOptions{
		Stateful: true,
		Verifier: StaticTokens(map[string]authz.Caller{"tok": {Subject: "alice"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	send := func(method, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer tok")
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
			req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	var kept []string
	for i := range 300 {
		id := send(http.MethodPost, "", initialize).Header.Get("Mcp-Session-Id")
		if id == "" {
			t.Fatal("initialize: no session id")
		}
		if i%100 == 0 {
			kept = append(kept, id)
			continue
		}
		if resp := send(http.MethodDelete, id, ""); resp.StatusCode/100 != 2 {
			t.Fatalf("DELETE: status %d", resp.StatusCode)
		}
	}
	open.mu.Lock()
	remembered := len(open.ids)
	open.mu.Unlock()
	if remembered > 2*64 {
		t.Errorf("remembers %d sessions with %d live", remembered, len(kept))
	}

	// A session of another transport is not the handler's to close.
	st, ct := mcp.NewInMemoryTransports()
	other, err := s.Connect(t.Context(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "local"}, nil).Connect(t.Context(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	live := func() (ids []string) {
		for ss := range s.Sessions() {
			ids = append(ids, ss.ID())
		}
		return ids
	}
	if got := live(); len(got) != len(kept)+1 {
		t.Fatalf("live sessions %q, want the %d kept and the in-memory one", got, len(kept))
	}
	open.closeAll(t.Context())
	if got := live(); len(got) != 1 || got[0] != other.ID() {
		t.Errorf("after closeAll: live sessions %q, want only the in-memory one", got)
	}
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("the in-memory session after closeAll: %v", err)
	}
}

// TestSessionsForgetEndedStreams: a standalone GET stream that ended is
// forgotten; otherwise every stream a long-running stateful server ever
// served would stay in ss.streams, with its *http.Request (headers, the
// bearer token).
func TestSessionsForgetEndedStreams(t *testing.T) {
	s, err := New(Options{Authorizer: authz.AllowAll()})
	if err != nil {
		t.Fatal(err)
	}
	ss := newSessions(s)
	ended := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}) // the stream ends at once
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer secret")
		ss.serve(ended, httptest.NewRecorder(), req)
	}
	ss.mu.Lock()
	n := len(ss.streams)
	ss.mu.Unlock()
	if n != 0 {
		t.Errorf("%d ended streams still tracked, want 0", n)
	}
}
