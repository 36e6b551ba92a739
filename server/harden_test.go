package server_test

import (
	"bufio"
	"context"
	"encoding/json"
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
	<-served
	sw.Close()
	<-read
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
		<-d.started
		time.Sleep(3 * timeout)
		close(d.release)
		if m := <-res; m == nil || m["result"] == nil {
			t.Errorf("the call outliving the body timeout got %v, want its result", m)
		}
	})
}

func TestBodyTimeoutNegativeRefused(t *testing.T) {
	s, _ := hangServer(t)
	if _, err := server.HTTPHandler(s, server.HTTPOptions{Verifier: server.StaticTokens(testTokens), BodyTimeout: -1}); err == nil || !strings.Contains(err.Error(), "BodyTimeout") {
		t.Errorf("HTTPHandler with a negative BodyTimeout: %v, want an error naming it", err)
	}
}
