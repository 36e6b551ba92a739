package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
)

// rawStdio serves a test server over StdioServer.Serve, writes lines as a client
// would (then closes its input), and returns every message the server
// wrote until it ended (a batch's answers one by one), with Serve's
// error.
func rawStdio(t *testing.T, lines ...string) ([]map[string]any, error) {
	t.Helper()
	d := newDeps("stdio")
	inW, outR, served := serveRawIO(newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local", Roles: []string{"viewer"}}}, d))
	go func() {
		for _, l := range lines {
			if _, err := io.WriteString(inW, l); err != nil {
				return
			}
		}
		inW.Close()
	}()
	var got []map[string]any
	sc := bufio.NewScanner(outR)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var batch []map[string]any
		if json.Unmarshal(sc.Bytes(), &batch) == nil {
			got = append(got, batch...) // a batch's answers
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", sc.Text())
		}
		got = append(got, m)
	}
	return got, await.Recv(t, served, "Serve's return")
}

// serveRawIO serves s with StdioServer.Serve over pipes: a raw client writes to in
// and reads the server's output from out; served yields Serve's error
// once the server's output is closed.
func serveRawIO(s *mcp.Server) (in *io.PipeWriter, out *io.PipeReader, served <-chan error) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := server.NewStdioServer(s, inR, outW).Serve(context.Background())
		outW.Close()
		done <- err
	}()
	return inW, outR, done
}

// scanLines sends r's lines on the returned channel, closed at r's end.
func scanLines(r io.Reader) <-chan string {
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(r)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	return lines
}

const initLine = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// byID indexes responses by id (JSON numbers as float64, null as "null").
func byID(resps []map[string]any) map[string]map[string]any {
	m := map[string]map[string]any{}
	for _, r := range resps {
		id, _ := json.Marshal(r["id"])
		m[string(id)] = r
	}
	return m
}

func errorCode(r map[string]any) float64 {
	e, _ := r["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return c
}

// TestStdioBadLines: a line that is not JSON, or not a JSON-RPC message,
// is answered with a JSON-RPC error and the session goes on serving; the
// SDK alone would end the session at the first such line and lose every
// call in flight.
func TestStdioBadLines(t *testing.T) {
	resps, err := rawStdio(t,
		initLine,
		"garbage{\n",
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"one"}}}`+"\n",
		`{"no":"jsonrpc","id":7}`+"\n",
		"42\n",
		"\n   \n",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":2}}}`+"\n",
		`{"jsonrpc":"2.0","id":3,"method":"ping"}`, // last line, no newline
	)
	if err != nil {
		t.Fatalf("Serve = %v, want nil after the client closed its input", err)
	}
	ids := byID(resps)
	var nulls []float64
	for _, r := range resps {
		if r["id"] == nil {
			nulls = append(nulls, errorCode(r))
		}
	}
	if diff := cmp.Diff([]float64{-32700, -32600}, nulls); diff != "" {
		t.Errorf("errors with a null id (-want +got):\n%s", diff)
	}
	if got := errorCode(ids["7"]); got != -32600 {
		t.Errorf("a JSON object that is not JSON-RPC: code %v, want -32600 with its id 7; all: %v", got, resps)
	}
	if res, _ := ids["1"]["result"].(map[string]any); res == nil || res["isError"] == true {
		t.Errorf("call 1 after a bad line: %v, want a result", ids["1"])
	}
	if res, _ := ids["2"]["result"].(map[string]any); res == nil || res["isError"] != true {
		t.Errorf("call 2 with a wrong argument type: %v, want an isError result", ids["2"])
	}
	if _, ok := ids["3"]["result"]; !ok {
		t.Errorf("ping on the last line without a newline: %v, want a result", ids["3"])
	}
}

// TestStdioAnswersBeforeEOF: a client that writes its requests and closes
// its input at once still gets every answer, even to a call still
// running when its input ended.
func TestStdioAnswersBeforeEOF(t *testing.T) {
	var lines []string
	lines = append(lines, initLine)
	for i := range 20 {
		lines = append(lines, `{"jsonrpc":"2.0","id":`+itoa(i)+`,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`+"\n")
	}
	resps, err := rawStdio(t, lines...)
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	ids := byID(resps)
	if _, ok := ids[`"init"`]["result"]; !ok {
		t.Errorf("initialize unanswered: %v", resps)
	}
	for i := range 20 {
		if _, ok := ids[itoa(i)]["result"]; !ok {
			t.Errorf("call %d unanswered after the client closed its input", i)
		}
	}
}

// TestStdioOverlongLine: a line over the SDK's line limit is refused
// without ending the session.
func TestStdioOverlongLine(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":9,"method":"ping","params":{"pad":"` + strings.Repeat("a", mcp.DefaultMaxLineLength) + `"}}` + "\n"
	resps, err := rawStdio(t, initLine, long, `{"jsonrpc":"2.0","id":10,"method":"ping"}`+"\n")
	if err != nil {
		t.Fatalf("Serve = %v", err)
	}
	ids := byID(resps)
	if got := errorCode(ids["null"]); got != -32700 {
		t.Errorf("overlong line: %v, want a -32700 error", ids["null"])
	}
	if _, ok := ids["9"]; ok {
		t.Errorf("the overlong request was served: %v", ids["9"])
	}
	if _, ok := ids["10"]["result"]; !ok {
		t.Errorf("ping after the overlong line: %v, want a result", ids["10"])
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// wireStdio serves a test server with deps d over StdioServer.Serve, as rawStdio
// does, but line by line: send writes as the client, next returns the
// answers on the server's next line (one, or a batch's), failing the test
// if the server has stopped writing (or writes nothing before hangGuard:
// a failure that would otherwise hang), and end closes the client's input
// and returns Serve's error.
func wireStdio(t *testing.T, d *deps) (send func(string), next func() []map[string]any, end func() error) {
	t.Helper()
	inW, outR, served := serveRawIO(newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local", Roles: []string{"viewer"}}}, d))
	lines := scanLines(outR)
	send = func(line string) {
		t.Helper()
		if _, err := io.WriteString(inW, line); err != nil {
			t.Fatalf("writing %q: %v", line, err)
		}
	}
	next = func() []map[string]any {
		t.Helper()
		var line string
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("the server stopped writing: the session ended")
			}
			line = l
		case <-time.After(hangGuard):
			t.Fatal("no answer from the server")
		}
		var batch []map[string]any
		if json.Unmarshal([]byte(line), &batch) == nil {
			return batch
		}
		var one map[string]any
		if err := json.Unmarshal([]byte(line), &one); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", line)
		}
		return []map[string]any{one}
	}
	var (
		ended  sync.Once
		endErr error
	)
	end = func() error {
		ended.Do(func() {
			inW.Close()
			for range lines {
			}
			endErr = await.Recv(t, served, "Serve's return")
		})
		return endErr
	}
	t.Cleanup(func() { end() }) // should the test fail early
	return send, next, end
}

// batchInit opens a session of a protocol that allows JSON-RPC batches.
const batchInit = `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}` + "\n" +
	`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n"

// TestStdioMalformedBatch: a "[" line that is valid JSON but a batch the
// SDK cannot take (empty, an element that is not a JSON-RPC message, a
// request id twice) is answered with -32600 and a null id, and dropped;
// the session goes on serving. The SDK alone ends the session at such a
// line, losing every call in flight.
func TestStdioMalformedBatch(t *testing.T) {
	for _, bad := range []string{
		"[]",
		"[1]",
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"not":"jsonrpc"}]`,
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},{"jsonrpc":"2.0","id":5,"method":"ping"}]`,
	} {
		t.Run(bad, func(t *testing.T) {
			resps, err := rawStdio(t, initLine, bad+"\n", `{"jsonrpc":"2.0","id":10,"method":"ping"}`+"\n")
			if err != nil {
				t.Errorf("Serve = %v, want nil (the session survives a bad batch)", err)
			}
			ids := byID(resps)
			if got := errorCode(ids["null"]); got != -32600 {
				t.Errorf("the bad batch: %v, want a -32600 error with a null id; all: %v", ids["null"], resps)
			}
			if _, ok := ids["10"]["result"]; !ok {
				t.Errorf("ping after the bad batch: unanswered; all: %v", resps)
			}
		})
	}
}

// TestStdioBatchReusesInFlightID: a batch reusing the id of a call still
// in flight is answered with -32600 (null id) and dropped; the call in
// flight is still answered, and later batches too. The SDK ends the
// session at a batch reusing the id of an earlier batch's call, and never
// answers one reusing the id of a call sent on its own.
func TestStdioBatchReusesInFlightID(t *testing.T) {
	const wait = `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"wait","arguments":{}}}`
	for _, tt := range []struct{ name, first string }{
		{"in a batch", "[" + wait + "]"},
		{"on its own", wait},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeps("stdio")
			send, next, end := wireStdio(t, d)
			var release sync.Once
			defer release.Do(func() { close(d.release) }) // should the test fail early
			send(batchInit)
			if got := next(); got[0]["id"] != "init" {
				t.Fatalf("initialize's answer = %v", got)
			}
			send(tt.first + "\n")
			await.Recv(t, d.started, "the call's start")
			send(`[{"jsonrpc":"2.0","id":5,"method":"ping"}]` + "\n")
			if got := next(); len(got) != 1 || got[0]["id"] != nil || errorCode(got[0]) != -32600 {
				t.Fatalf("the batch reusing id 5: %v, want a -32600 error with a null id", got)
			}
			send(`[{"jsonrpc":"2.0","id":6,"method":"ping"}]` + "\n")
			if got := next(); len(got) != 1 || got[0]["id"] != 6.0 || got[0]["result"] == nil {
				t.Errorf("the next batch's answer = %v, want ping 6's result", got)
			}
			release.Do(func() { close(d.release) })
			if got := next(); len(got) != 1 || got[0]["id"] != 5.0 || got[0]["result"] == nil {
				t.Errorf("the call in flight's answer = %v, want its result", got)
			}
			if err := end(); err != nil {
				t.Errorf("Serve = %v, want nil", err)
			}
		})
	}
}

// TestStdioBatchWithNotifications: a batch holding notifications beside
// its calls is answered (with the calls' answers only), and so is the
// next one. The SDK takes a batch's notifications for requests awaiting
// an answer (all under one empty id): it never answers such a batch, and
// ends the session at the second; lineGuard passes the notifications on
// as lines of their own.
func TestStdioBatchWithNotifications(t *testing.T) {
	const cancelNothing = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`
	resps, err := rawStdio(t, batchInit,
		`[{"jsonrpc":"2.0","id":5,"method":"ping"},`+cancelNothing+`]`+"\n",
		`[`+cancelNothing+`,{"jsonrpc":"2.0","id":6,"method":"ping"},`+cancelNothing+`]`+"\n",
		`[`+cancelNothing+`]`+"\n",
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n")
	if err != nil {
		t.Errorf("Serve = %v, want nil", err)
	}
	ids := byID(resps)
	for _, id := range []string{"5", "6", "7"} {
		if _, ok := ids[id]["result"]; !ok {
			t.Errorf("ping %s unanswered; all: %v", id, resps)
		}
	}
}

// TestStdioTrailingWhitespace: a message followed by blanks before its
// newline is served, and the session goes on; the SDK alone ends the
// session at anything but a newline after a message.
func TestStdioTrailingWhitespace(t *testing.T) {
	for _, tail := range []string{" ", "\t", " \t\r"} {
		resps, err := rawStdio(t, batchInit,
			`{"jsonrpc":"2.0","id":9,"method":"ping"}`+tail+"\n",
			`  [{"jsonrpc":"2.0","id":10,"method":"ping"}]`+tail+"\n",
			`{"jsonrpc":"2.0","id":11,"method":"ping"}`+tail)
		if err != nil {
			t.Errorf("tail %q: Serve = %v, want nil", tail, err)
		}
		ids := byID(resps)
		for _, id := range []string{"9", "10", "11"} {
			if _, ok := ids[id]["result"]; !ok {
				t.Errorf("tail %q: ping %s unanswered; all: %v", tail, id, resps)
			}
		}
	}
}
