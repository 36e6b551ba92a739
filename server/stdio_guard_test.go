package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
)

// rawStdio serves a test server over ServeIO, writes lines as a client
// would (then closes its input), and returns every line the server wrote
// until it ended, with ServeIO's error.
func rawStdio(t *testing.T, lines ...string) ([]map[string]any, error) {
	t.Helper()
	d := newDeps("stdio")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local", Roles: []string{"viewer"}}}, d)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() {
		err := server.ServeIO(context.Background(), s, inR, outW)
		outW.Close()
		served <- err
	}()
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
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("server wrote a line that is not JSON: %q", sc.Text())
		}
		got = append(got, m)
	}
	return got, <-served
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
		t.Fatalf("ServeIO = %v, want nil after the client closed its input", err)
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
		t.Fatalf("ServeIO = %v", err)
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
		t.Fatalf("ServeIO = %v", err)
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
