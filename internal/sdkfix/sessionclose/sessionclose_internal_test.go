package sessionclose

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// statefulHandler returns a Handler over a stateful SDK handler of a new
// server.
func statefulHandler() (*mcp.Server, *Handler) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	h := New(s, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), Limits{Total: 64, PerUser: 64, MaxBody: 1 << 20})
	return s, h
}

// TestRemembersOnlyLiveSessions: the handler remembers the sessions it
// opened so that a shutdown can close them; sessions that ended without
// it (DELETE here, idle expiry likewise) are dropped, so what it
// remembers stays proportional to the live sessions, and CloseAll closes
// exactly those.
func TestRemembersOnlyLiveSessions(t *testing.T) {
	s, h := statefulHandler()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	send := func(method, session, body string) *http.Response {
		t.Helper()
		req, _ := http.NewRequest(method, srv.URL, strings.NewReader(body))
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
	h.mu.Lock()
	remembered := len(h.ids)
	h.mu.Unlock()
	if remembered > 64 {
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
	h.CloseAll(t.Context())
	if got := live(); len(got) != 1 || got[0] != other.ID() {
		t.Errorf("after CloseAll: live sessions %q, want only the in-memory one", got)
	}
	if err := cs.Ping(t.Context(), nil); err != nil {
		t.Errorf("the in-memory session after CloseAll: %v", err)
	}
}

// TestForgetsEndedStreams: a standalone GET stream that ended is
// forgotten; otherwise every stream a long-running stateful server ever
// served would stay in h.streams, with its *http.Request (headers, the
// bearer token).
func TestForgetsEndedStreams(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, nil)
	ended := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}) // the stream ends at once
	h := New(s, ended, Limits{Total: 1, PerUser: 1})
	for range 3 {
		req := httptest.NewRequest(http.MethodGet, "/mcp", nil)
		req.Header.Set("Authorization", "Bearer secret")
		h.ServeHTTP(httptest.NewRecorder(), req)
	}
	h.mu.Lock()
	n := len(h.streams)
	h.mu.Unlock()
	if n != 0 {
		t.Errorf("%d ended streams still tracked, want 0", n)
	}
}
