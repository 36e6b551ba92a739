// Package tasktest is a raw HTTP client of the MCP Tasks extension
// (SEP-2663), for tests: each request is one JSON-RPC POST with the
// 2026-07-28 headers (Mcp-Protocol-Version, Mcp-Method, Mcp-Name: the
// tool's name or the task id) and _meta (protocol version, client
// capabilities declaring the extension or not), as a client following
// the SEP sends it. Only tests may import it.
package tasktest

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Extension is the extension's identifier.
const Extension = "io.modelcontextprotocol/tasks"

// Client is one caller at one MCP endpoint.
type Client struct {
	// URL is the MCP endpoint.
	URL string
	// Token is the bearer token.
	Token string
	// Declares makes every request declare the extension.
	Declares bool
	// Version is the protocol version; "" selects 2026-07-28. Before
	// 2026-07-28 no _meta nor Mcp-Method/Mcp-Name is sent.
	Version string
}

// Error is a JSON-RPC error answer.
type Error struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

var ids atomic.Int64

// RPC sends method with params (which it may change: it adds _meta) and
// returns the result or the error. name is the Mcp-Name header; ""
// selects the SEP's: params' "name" (a tool), else its "taskId".
func (c Client) RPC(tb testing.TB, method string, params map[string]any, name string) (map[string]any, *Error) {
	tb.Helper()
	version := c.Version
	if version == "" {
		version = "2026-07-28"
	}
	if params == nil {
		params = map[string]any{}
	}
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if c.Declares {
		caps["extensions"] = map[string]any{Extension: map[string]any{}}
	}
	modern := version >= "2026-07-28"
	if modern {
		params["_meta"] = map[string]any{
			"io.modelcontextprotocol/protocolVersion":    version,
			"io.modelcontextprotocol/clientCapabilities": caps,
		}
	}
	if name == "" {
		if n, ok := params["name"].(string); ok {
			name = n
		} else if n, ok := params["taskId"].(string); ok {
			name = n
		}
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": ids.Add(1), "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, c.URL, strings.NewReader(string(body)))
	if err != nil {
		tb.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+c.Token)
	req.Header.Set("Mcp-Protocol-Version", version)
	if modern {
		req.Header.Set("Mcp-Method", method)
		if name != "" {
			req.Header.Set("Mcp-Name", name)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("tasktest: POST %s: %v", method, err)
	}
	defer resp.Body.Close()
	// One JSON body, or one text/event-stream event whose data is it.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	var data strings.Builder
	sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
	for sc.Scan() {
		if !sse {
			data.WriteString(sc.Text())
		} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			data.Reset()
			data.WriteString(d)
		}
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  *Error         `json:"error"`
	}
	if err := json.Unmarshal([]byte(data.String()), &msg); err != nil {
		tb.Fatalf("tasktest: %s: HTTP %d, answer %q: %v", method, resp.StatusCode, data.String(), err)
	}
	return msg.Result, msg.Error
}

// Call calls the tool name with args (nil: none).
func (c Client) Call(tb testing.TB, name string, args map[string]any) (map[string]any, *Error) {
	tb.Helper()
	if args == nil {
		args = map[string]any{}
	}
	return c.RPC(tb, "tools/call", map[string]any{"name": name, "arguments": args}, "")
}

// Create calls the tool name with args and returns the id of the task
// it became; anything else fails tb.
func (c Client) Create(tb testing.TB, name string, args map[string]any) string {
	tb.Helper()
	res, rerr := c.Call(tb, name, args)
	if rerr != nil {
		tb.Fatalf("tasktest: tools/call %s: error %+v", name, rerr)
	}
	if res["resultType"] != "task" {
		tb.Fatalf("tasktest: tools/call %s = %v, want a CreateTaskResult", name, res)
	}
	id, _ := res["taskId"].(string)
	return id
}

// Get returns tasks/get's answer.
func (c Client) Get(tb testing.TB, id string) (map[string]any, *Error) {
	tb.Helper()
	return c.RPC(tb, "tasks/get", map[string]any{"taskId": id}, "")
}

// Until polls tasks/get until the task has status and returns it; it
// fails tb after bound, or at an error answer.
func (c Client) Until(tb testing.TB, id, status string, bound time.Duration) map[string]any {
	tb.Helper()
	deadline := time.Now().Add(bound)
	var last map[string]any
	for time.Now().Before(deadline) {
		res, rerr := c.Get(tb, id)
		if rerr != nil {
			tb.Fatalf("tasktest: tasks/get %s: %+v", id, rerr)
		}
		if res["status"] == status {
			return res
		}
		last = res
		time.Sleep(5 * time.Millisecond)
	}
	tb.Fatalf("tasktest: task %s did not become %s within %v; last %v", id, status, bound, last)
	return nil
}

// Text is the first text content of a CallToolResult object.
func Text(res any) string {
	m, _ := res.(map[string]any)
	c, _ := m["content"].([]any)
	if len(c) == 0 {
		return ""
	}
	first, _ := c[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}
