package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
)

// statefulSession is a raw client of a stateful HTTP session: it sees
// exactly what the server writes on each request's stream.
type statefulSession struct {
	t     *testing.T
	url   string
	id    string
	token string // "" : secretToken
}

// postRaw posts body on the session (no session before initialize) and
// returns the response, its body closed when the test ends.
func (s *statefulSession) postRaw(body string) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.url, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	token := s.token
	if token == "" {
		token = secretToken
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if s.id != "" {
		req.Header.Set("Mcp-Session-Id", s.id)
		req.Header.Set("Mcp-Protocol-Version", v2025)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Error(err)
		return nil
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// openStateful opens a session as alice, ended when the test ends.
func openStateful(t *testing.T, url string) *statefulSession {
	t.Helper()
	s := &statefulSession{t: t, url: url}
	init := s.postRaw(initializeBody)
	if s.id = init.Header.Get("Mcp-Session-Id"); s.id == "" {
		t.Fatal("no session id")
	}
	messages(t, init)
	t.Cleanup(func() { // end the session, as a client does when it closes
		req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
		req.Header.Set("Authorization", "Bearer "+secretToken)
		req.Header.Set("Mcp-Session-Id", s.id)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	})
	if resp := s.postRaw(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/initialized: status %d", resp.StatusCode)
	}
	return s
}

// messages reads a response's SSE stream to its end and returns the
// JSON-RPC messages it carried.
func messages(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("event data %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

// TestStatefulHTTPCancelledCallGetsNoResult: over stateful HTTP,
// notifications/cancelled stops the handler, and the server sends no
// result for the call (the SDK would send the handler's error); the
// session keeps serving.
func TestStatefulHTTPCancelledCallGetsNoResult(t *testing.T) {
	d, s, stream := statefulWaitCall(t)
	if resp := s.postRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"changed my mind"}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", resp.StatusCode)
	}
	if cause := await.Recv(t, d.causes, "the handler's cause"); !errors.Is(cause, context.Canceled) {
		t.Errorf("the handler's context ended with %v, want context.Canceled", cause)
	}
	for _, m := range <-stream {
		if m["id"] != nil {
			t.Errorf("the cancelled call was answered: %v", m)
		}
	}

	// The session keeps serving, and answers.
	ms := messages(t, s.postRaw(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"still here"}}}`))
	if len(ms) != 1 || ms[0]["id"] != 3.0 || !strings.Contains(mustMarshal(t, ms[0]["result"]), "still here") {
		t.Errorf("the next call's stream = %v", ms)
	}
	// A call cancelled too late, after its answer, changes nothing. (The
	// next call has a new id: MCP forbids reusing one within a session,
	// and the SDK applies a cancellation asynchronously, so a reused id
	// could be cancelled by the late notification.)
	if resp := s.postRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("late notifications/cancelled: status %d", resp.StatusCode)
	}
	ms = messages(t, s.postRaw(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"echo","arguments":{"text":"after a late cancel"}}}`))
	if len(ms) != 1 || ms[0]["id"] != 4.0 || !strings.Contains(mustMarshal(t, ms[0]["result"]), "after a late cancel") {
		t.Errorf("the call after a late cancellation = %v", ms)
	}
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestStatefulHTTPCancelFromAnotherCaller: a cancellation sent on alice's
// session by another caller is refused, and alice's call is answered.
func TestStatefulHTTPCancelFromAnotherCaller(t *testing.T) {
	d, s, stream := statefulWaitCall(t)
	victor := &statefulSession{t: t, url: s.url, id: s.id, token: "viewer-token"}
	if resp := victor.postRaw(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`); resp.StatusCode != http.StatusForbidden {
		t.Errorf("another caller's cancellation: status %d, want 403", resp.StatusCode)
	}
	close(d.release)
	ms := await.Recv(t, stream, "the event stream's messages")
	if len(ms) != 1 || ms[0]["id"] != 2.0 || !strings.Contains(mustMarshal(t, ms[0]["result"]), `"done":true`) {
		t.Errorf("alice's call's stream = %v, want its result", ms)
	}
}

// statefulWaitCall opens a stateful session as alice and starts a "wait"
// call, id 2, on it; stream yields the messages of the call's stream once
// it ends. It returns when the handler runs.
func statefulWaitCall(t *testing.T) (*deps, *statefulSession, <-chan []map[string]any) {
	t.Helper()
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{Authorizer: authz.AllowAll()}, d), server.HTTPOptions{Stateful: true})
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	s := openStateful(t, hs.URL())
	// The stream's headers come with its first event: post in the
	// background.
	stream := make(chan []map[string]any, 1)
	go func() {
		if resp := s.postRaw(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"wait","arguments":{}}}`); resp != nil {
			stream <- messages(t, resp)
		}
		close(stream)
	}()
	await.Recv(t, d.started, "the call's start")
	return d, s, stream
}
