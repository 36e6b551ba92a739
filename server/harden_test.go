package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// hangDeps counts the "hang" calls running.
type hangDeps struct {
	running atomic.Int64
	ended   atomic.Int64
}

// hangServer serves one tool, "hang", that runs until its context ends
// (it honours cancellation, as tools must), and returns the context's
// error.
func hangServer(t *testing.T) (*mcp.Server, *hangDeps) {
	t.Helper()
	d := &hangDeps{}
	r := registry.New[*hangDeps]()
	r.Register(tool.Tool[*hangDeps]{
		Name: "hang", Description: "Run until cancelled.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *hangDeps, _ *mcp.CallToolRequest, _ noArgs) (waitOut, error) {
			d.running.Add(1)
			defer d.ended.Add(1)
			<-ctx.Done()
			return waitOut{}, ctx.Err()
		}),
	})
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}, CallTimeout: -1, Logger: discardLogger}, server.Install(r, d))
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

// waitFor polls cond until it holds or the test times out.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// checkShutdownAnswer checks that answer (a JSON-RPC response) is the
// error of call id naming the shutdown: a JSON-RPC error, or an error
// result.
func checkShutdownAnswer(t *testing.T, id int, answer map[string]any) {
	t.Helper()
	if answer == nil {
		t.Errorf("call %d: no answer (the connection ended without one)", id)
		return
	}
	if got, _ := answer["id"].(float64); int(got) != id {
		t.Errorf("call %d: answer of id %v", id, answer["id"])
	}
	data, _ := json.Marshal(answer)
	if !strings.Contains(string(data), "shutting down") {
		t.Errorf("call %d: answer %s does not name the shutdown", id, data)
	}
	if _, isErr := answer["error"]; !isErr {
		if res, _ := answer["result"].(map[string]any); res == nil || res["isError"] != true {
			t.Errorf("call %d: answer %s is neither an error nor an error result", id, data)
		}
	}
}

const hangingCalls = 50

func callBody(id int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"hang","arguments":{}}}`, id)
}

// TestHardShutdownAnswersEveryCall: past the shutdown's deadline, every
// one of 50 calls in flight is answered with an error naming the
// shutdown before its connection closes, over stateless and stateful
// HTTP.
func TestHardShutdownAnswersEveryCall(t *testing.T) {
	for _, stateful := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateful=%v", stateful), func(t *testing.T) {
			s, d := hangServer(t)
			hs := startHTTP(t, s, server.HTTPOptions{Stateful: stateful})
			sess := &statefulSession{t: t, url: hs.URL()}
			if stateful {
				sess = openStateful(t, hs.URL())
			}
			answers := make([]map[string]any, hangingCalls+1)
			var wg sync.WaitGroup
			for id := 1; id <= hangingCalls; id++ {
				wg.Go(func() {
					req, _ := http.NewRequest(http.MethodPost, hs.URL(), strings.NewReader(callBody(id)))
					req.Header.Set("Content-Type", "application/json")
					req.Header.Set("Accept", "application/json, text/event-stream")
					req.Header.Set("Authorization", "Bearer "+secretToken)
					req.Header.Set("Mcp-Protocol-Version", v2025)
					if sess.id != "" {
						req.Header.Set("Mcp-Session-Id", sess.id)
					}
					resp, err := http.DefaultClient.Do(req)
					if err != nil {
						t.Errorf("call %d: %v", id, err)
						return
					}
					defer resp.Body.Close()
					answers[id] = lastMessage(resp.Body)
				})
			}
			waitFor(t, "50 running calls", func() bool { return d.running.Load() == hangingCalls })
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := hs.Shutdown(ctx); err == nil {
				t.Error("Shutdown past its deadline returned nil")
			}
			wg.Wait()
			for id := 1; id <= hangingCalls; id++ {
				checkShutdownAnswer(t, id, answers[id])
			}
		})
	}
}

// lastMessage reads an SSE stream to its end (or the connection's) and
// returns its last JSON-RPC message, or nil.
func lastMessage(r io.Reader) map[string]any {
	var last map[string]any
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var m map[string]any
			if json.Unmarshal([]byte(data), &m) == nil {
				last = m
			}
		}
	}
	return last
}

// TestHardShutdownAnswersEveryCallStdio: the same over stdio.
func TestHardShutdownAnswersEveryCallStdio(t *testing.T) {
	s, d := hangServer(t)
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	ss := server.NewStdioServer(s, sr, sw)
	served := make(chan error, 1)
	go func() { served <- ss.Serve(context.Background()) }()
	answers := map[int]map[string]any{}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(cr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				if id, ok := m["id"].(float64); ok {
					answers[int(id)] = m
				}
			}
		}
	}()
	write := func(line string) {
		if _, err := io.WriteString(cw, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	write(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for id := 1; id <= hangingCalls; id++ {
		write(callBody(id))
	}
	waitFor(t, "50 running calls", func() bool { return d.running.Load() == hangingCalls })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ss.Shutdown(ctx); err == nil {
		t.Error("Shutdown past its deadline returned nil")
	}
	await.Recv(t, served, "Serve's return")
	sw.Close()
	await.Recv(t, read, "the reader's end")
	cw.Close()
	for id := 1; id <= hangingCalls; id++ {
		checkShutdownAnswer(t, id, answers[id])
	}
}

// silentBody opens a connection to addr and sends a POST to path whose
// headers announce a 1,000-byte body that never comes. It returns when
// the server closes the connection, with how long that took, or fails
// after limit.
func silentBody(t *testing.T, addr, path, authorization string, limit time.Duration) time.Duration {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	start := time.Now()
	head := "POST " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n"
	if authorization != "" {
		head += "Authorization: " + authorization + "\r\n"
	}
	if _, err := io.WriteString(c, head+"\r\n"); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(start.Add(limit))
	_, err = io.Copy(io.Discard, c) // whatever the server answers, until it closes
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection is still open after %v", limit)
	}
	return time.Since(start)
}

// TestBodyTimeout: a client that sends a request's headers and not its
// body has its connection closed at HTTPOptions.BodyTimeout, with a valid
// token or without one, at the MCP endpoint and beside it; a long call's
// stream is not cut by it.
func TestBodyTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{BodyTimeout: timeout})
	for _, c := range []struct{ name, path, auth string }{
		{"valid token", "/mcp", "Bearer " + secretToken},
		{"no token", "/mcp", ""},
		{"bad token", "/mcp", "Bearer nope"},
		{"health", "/healthz", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if took := silentBody(t, hs.Addr(), c.path, c.auth, 5*time.Second); took < timeout {
				t.Errorf("closed after %v, before the body timeout %v", took, timeout)
			}
		})
	}
	t.Run("long call", func(t *testing.T) {
		res := make(chan map[string]any, 1)
		go func() {
			resp := post(t, hs.URL(), "Bearer "+secretToken, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"wait","arguments":{}}}`)
			res <- lastMessage(resp.Body)
		}()
		await.Recv(t, d.started, "the call's start")
		time.Sleep(3 * timeout)
		close(d.release)
		if m := await.Recv(t, res, "the response"); m == nil || m["result"] == nil {
			t.Errorf("the call outliving the body timeout got %v, want its result", m)
		}
	})
}

// openSession posts an initialize as token's caller, and returns the
// response (its body read) and the session id it opened ("" if none).
func openSession(t *testing.T, url, token string) (*http.Response, []byte, string) {
	t.Helper()
	resp := post(t, url, "Bearer "+token, initializeBody)
	body, _ := io.ReadAll(resp.Body)
	return resp, body, resp.Header.Get("Mcp-Session-Id")
}

func deleteSession(t *testing.T, url, token, id string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodDelete, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Session-Id", id)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("DELETE: status %d", resp.StatusCode)
	}
}

// checkRefusal checks that a refused initialize got status and a
// JSON-RPC error for its id (1) whose message contains want.
func checkRefusal(t *testing.T, resp *http.Response, body []byte, id string, status int, want string) {
	t.Helper()
	if resp.StatusCode != status || id != "" {
		t.Fatalf("initialize past the bound: status %d, session %q; want %d and no session", resp.StatusCode, id, status)
	}
	var m struct {
		ID    int `json:"id"`
		Error struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil || m.ID != 1 || m.Error.Code != -32000 || !strings.Contains(m.Error.Message, want) {
		t.Errorf("refusal body %s (%v): want a JSON-RPC error of id 1 saying %q", body, err, want)
	}
}

// TestStatefulSessionBounds: a caller opens at most MaxSessionsPerCaller
// sessions, all callers at most MaxSessions; past a bound, a clear
// refusal; a session closed (DELETE) or idled out frees its place.
func TestStatefulSessionBounds(t *testing.T) {
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{
		Stateful: true, MaxSessionsPerCaller: 3, MaxSessions: 5, SessionTimeout: time.Hour,
	})
	var alice []string
	for range 3 {
		_, _, id := openSession(t, hs.URL(), secretToken)
		if id == "" {
			t.Fatal("alice's initialize within the bound opened no session")
		}
		alice = append(alice, id)
	}
	resp, body, id := openSession(t, hs.URL(), secretToken)
	checkRefusal(t, resp, body, id, http.StatusTooManyRequests, "this caller has 3 sessions open")

	// Another caller has its own bound, within the total.
	for range 2 {
		if _, _, id := openSession(t, hs.URL(), "viewer-token"); id == "" {
			t.Fatal("victor's initialize within the bounds opened no session")
		}
	}
	resp, body, id = openSession(t, hs.URL(), "viewer-token")
	checkRefusal(t, resp, body, id, http.StatusServiceUnavailable, "5 sessions are open")

	// A closed session frees its place.
	deleteSession(t, hs.URL(), secretToken, alice[0])
	if _, _, id := openSession(t, hs.URL(), secretToken); id == "" {
		t.Error("after a DELETE, alice could not open a session")
	}
}

// TestStatefulSessionIdleTimeout: an idle session ends at SessionTimeout
// and frees its place.
func TestStatefulSessionIdleTimeout(t *testing.T) {
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{
		Stateful: true, MaxSessionsPerCaller: 1, SessionTimeout: 200 * time.Millisecond,
	})
	if _, _, id := openSession(t, hs.URL(), secretToken); id == "" {
		t.Fatal("no session")
	}
	if _, _, id := openSession(t, hs.URL(), secretToken); id != "" {
		t.Fatal("a second session past the bound of 1")
	}
	waitFor(t, "the idle session to end", func() bool {
		_, _, id := openSession(t, hs.URL(), secretToken)
		return id != ""
	})
}

// TestSessionBoundsOff: a negative MaxSessionsPerCaller turns the bound
// off: one caller opens more sessions than the default 32.
func TestSessionBoundsOff(t *testing.T) {
	s, _ := hangServer(t)
	hs := startHTTP(t, s, server.HTTPOptions{Stateful: true, MaxSessionsPerCaller: -1, SessionTimeout: time.Hour})
	for i := range 40 {
		if resp, body, id := openSession(t, hs.URL(), secretToken); id == "" {
			t.Fatalf("session %d: HTTP %d %s", i+1, resp.StatusCode, body)
		}
	}
}

// TestStatelessCancelOnlyTheCallersCall: over stateless HTTP, a
// notifications/cancelled in its own request cancels the call in flight
// of the same caller and id, never another caller's.
func TestStatelessCancelOnlyTheCallersCall(t *testing.T) {
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{})
	answer := startCall(t, hs.URL(), secretToken, `"c-5"`)
	await.Recv(t, d.started, "the call's start")
	postCancel(t, hs.URL(), "viewer-token", `"c-5"`) // another caller, same id
	postCancel(t, hs.URL(), secretToken, `5`)        // same caller, another id (a number)
	notCancelled(t, d, "another caller's or another id's cancellation")
	postCancel(t, hs.URL(), secretToken, `"c-5"`)
	select {
	case cause := <-d.causes:
		if !errors.Is(cause, server.ErrClientCancelledForTest) {
			t.Errorf("cause %v, want the client's cancellation", cause)
		}
	case <-time.After(5 * time.Second):
		close(d.release)
		t.Fatal("the caller's own cancellation did not cancel its call")
	}
	await.Recv(t, answer, "the call's answer")
}
