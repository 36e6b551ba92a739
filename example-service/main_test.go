package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/devproxy"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/server/servertest"
)

// logBuffer is a goroutine-safe standard error that reports the MCP
// endpoint's URL once the service has announced it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	url chan string
}

var endpointLine = regexp.MustCompile(`example-service: serving MCP at (http://\S+)\n`)

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	had := endpointLine.Match(b.buf.Bytes())
	b.buf.Write(p)
	if m := endpointLine.FindSubmatch(b.buf.Bytes()); !had && m != nil {
		b.url <- string(m[1])
	}
	return len(p), nil
}

// waitFor waits until the log holds a line containing every one of
// parts, and reports whether it came. The bound only guards against a
// hang; it is no performance assertion.
func (b *logBuffer) waitFor(parts ...string) bool {
	for range 3000 {
		for _, line := range strings.Split(b.String(), "\n") {
			if !slices.ContainsFunc(parts, func(p string) bool { return !strings.Contains(line, p) }) {
				return true
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	return false
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// start runs the whole service (run, as main does, with its fx app) on
// 127.0.0.1:0 with args, and returns its MCP endpoint and its standard
// error. The service stops when the test ends; it must stop cleanly.
func start(t *testing.T, args ...string) (string, *logBuffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &logBuffer{url: make(chan string, 1)}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cancel()
		if err := await.Recv(t, done, "run's return"); err != nil {
			t.Errorf("run stopped with %v", err)
		}
	})
	select {
	case url := <-stderr.url:
		return url, stderr
	case err := <-done:
		done <- err
		t.Fatalf("run ended before serving: %v\n%s", err, stderr)
		return "", nil
	}
}

func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) (map[string]any, string, error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return nil, "", err
	}
	var text strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text.WriteString(tc.Text)
		}
	}
	if res.IsError {
		return nil, text.String(), nil
	}
	var out map[string]any
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out, "", nil
}

var (
	viewerTools = []string{"audit_catalog", "get_item", "list_items", "whoami"}
	editorTools = []string{"audit_catalog", "create_item", "get_item", "list_items", "update_item", "whoami"}
	adminTools  = []string{"audit_catalog", "create_item", "delete_item", "get_item", "list_items", "update_item", "whoami"}
)

// TestDemo is the newcomer's experience: the service with no flags at all
// (but the address), driven over real HTTP with the demo tokens.
func TestDemo(t *testing.T) {
	url, stderr := start(t)

	for _, want := range []string{
		"LOCAL-DEMO credentials",
		"Authorization: Bearer demo-viewer",
		"Authorization: Bearer demo-editor",
		"Authorization: Bearer demo-admin",
		"upstream catalog: embedded, in process",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("start-up announcement lacks %q:\n%s", want, stderr)
		}
	}

	t.Run("visibility", func(t *testing.T) {
		tests := []struct {
			token, version string
			want           []string
		}{
			{"demo-viewer", "", viewerTools},
			{"demo-editor", "", editorTools},
			{"demo-admin", "", adminTools},
			{"demo-viewer", "2025-11-25", viewerTools},
			{"demo-admin", "2025-11-25", adminTools},
		}
		for _, tt := range tests {
			cs := servertest.ConnectHTTP(t, url, tt.token, servertest.Options{ProtocolVersion: tt.version})
			if diff := cmp.Diff(tt.want, servertest.ToolNames(t, cs)); diff != "" {
				t.Errorf("%s (protocol %q) sees (-want +got):\n%s", tt.token, tt.version, diff)
			}
		}
	})

	t.Run("whoami", func(t *testing.T) {
		cs := servertest.ConnectHTTP(t, url, "demo-editor", servertest.Options{})
		out, errText, err := call(t, cs, "whoami", nil)
		if err != nil || errText != "" {
			t.Fatalf("whoami: %v %s", err, errText)
		}
		if diff := cmp.Diff(map[string]any{"subject": "editor@demo", "roles": []any{"editor"}}, out); diff != "" {
			t.Errorf("whoami (-want +got):\n%s", diff)
		}
	})

	t.Run("hidden tools answer like unknown ones", func(t *testing.T) {
		for _, token := range []string{"demo-viewer", "demo-editor"} {
			cs := servertest.ConnectHTTP(t, url, token, servertest.Options{})
			_, _, hiddenErr := call(t, cs, "delete_item", map[string]any{"id": "itm-1"})
			_, _, unknownErr := call(t, cs, "no_such_tool", map[string]any{"id": "itm-1"})
			var hidden, unknown *jsonrpc.Error
			if !errors.As(hiddenErr, &hidden) || !errors.As(unknownErr, &unknown) {
				t.Fatalf("%s: delete_item error %v, unknown tool error %v; want JSON-RPC errors", token, hiddenErr, unknownErr)
			}
			if hidden.Code != jsonrpc.CodeInvalidParams || hidden.Code != unknown.Code ||
				hidden.Message != strings.ReplaceAll(unknown.Message, "no_such_tool", "delete_item") {
				t.Errorf("%s: hidden tool: %d %q; unknown tool: %d %q; want the same answer", token, hidden.Code, hidden.Message, unknown.Code, unknown.Message)
			}
		}
		// The hidden call changed nothing.
		cs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{})
		if _, errText, err := call(t, cs, "get_item", map[string]any{"id": "itm-1"}); err != nil || errText != "" {
			t.Errorf("itm-1 after hidden deletes: %v %s", err, errText)
		}
	})

	t.Run("round trip as admin", func(t *testing.T) {
		cs := servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{})
		created, errText, err := call(t, cs, "create_item", map[string]any{"name": "Grinder", "quantity": 2})
		if err != nil || errText != "" {
			t.Fatalf("create_item: %v %s", err, errText)
		}
		id, _ := created["id"].(string)
		if !strings.HasPrefix(id, "itm-") || created["name"] != "Grinder" || created["quantity"] != 2.0 {
			t.Fatalf("create_item returned %v", created)
		}
		got, errText, err := call(t, cs, "get_item", map[string]any{"id": id})
		if err != nil || errText != "" {
			t.Fatalf("get_item: %v %s", err, errText)
		}
		if diff := cmp.Diff(created, got); diff != "" {
			t.Errorf("get_item (-created +got):\n%s", diff)
		}
		updated, errText, err := call(t, cs, "update_item", map[string]any{"id": id, "name": "Grinder, burr", "quantity": 3})
		if err != nil || errText != "" {
			t.Fatalf("update_item: %v %s", err, errText)
		}
		if diff := cmp.Diff(map[string]any{"id": id, "name": "Grinder, burr", "quantity": 3.0}, updated); diff != "" {
			t.Errorf("update_item (-want +got):\n%s", diff)
		}
		list, _, err := call(t, cs, "list_items", nil)
		if err != nil || !strings.Contains(mustJSON(t, list), `"Grinder, burr"`) {
			t.Errorf("list_items after update: %v %v", err, list)
		}
		deleted, errText, err := call(t, cs, "delete_item", map[string]any{"id": id})
		if err != nil || errText != "" {
			t.Fatalf("delete_item: %v %s", err, errText)
		}
		if diff := cmp.Diff(map[string]any{"id": id, "deleted": true}, deleted); diff != "" {
			t.Errorf("delete_item (-want +got):\n%s", diff)
		}
		for _, tool := range []string{"get_item", "delete_item"} {
			if _, errText, err := call(t, cs, tool, map[string]any{"id": id}); err != nil || errText != `upstream answered 404 Not Found: item "`+id+`" not found` {
				t.Errorf("%s after delete: error %v, text %q; want an isError not found", tool, err, errText)
			}
		}
	})

	t.Run("an editor's update goes through, a viewer's create does not exist", func(t *testing.T) {
		cs := servertest.ConnectHTTP(t, url, "demo-editor", servertest.Options{})
		if _, errText, err := call(t, cs, "update_item", map[string]any{"id": "itm-2", "name": "Milk jug", "quantity": 7}); err != nil || errText != "" {
			t.Errorf("editor update_item: %v %s", err, errText)
		}
		vs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{})
		got, _, err := call(t, vs, "get_item", map[string]any{"id": "itm-2"})
		if err != nil || got["quantity"] != 7.0 {
			t.Errorf("viewer get_item after the editor's update: %v %v", got, err)
		}
		if _, _, err := call(t, vs, "create_item", map[string]any{"name": "x", "quantity": 1}); err == nil {
			t.Error("viewer create_item: no protocol error")
		}
	})

	t.Run("tokens", func(t *testing.T) {
		tests := []struct {
			name, auth string
			want       int
		}{
			{"no token", "", http.StatusUnauthorized},
			{"unknown token", "Bearer demo-root", http.StatusUnauthorized},
			{"not a bearer", "Basic ZGVtbzpkZW1v", http.StatusUnauthorized},
			{"demo token", "Bearer demo-viewer", http.StatusOK},
		}
		for _, tt := range tests {
			if got := status(t, url, tt.auth); got != tt.want {
				t.Errorf("%s: HTTP %d, want %d", tt.name, got, tt.want)
			}
		}
	})

	t.Run("audit progress over HTTP", func(t *testing.T) {
		notes := make(chan float64, 10)
		client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
				notes <- req.Params.Progress
			},
		})
		cs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{Client: client})
		params := &mcp.CallToolParams{Name: "audit_catalog"}
		params.SetProgressToken("p")
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			t.Fatalf("audit_catalog: %v", err)
		}
		var out struct{ Checked int }
		data, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(data, &out)
		var got []float64
		for range out.Checked {
			got = append(got, await.Recv(t, notes, "the next notification"))
		}
		if out.Checked < 3 || !slices.IsSorted(got) || got[len(got)-1] != float64(out.Checked) {
			t.Errorf("audit of %d items reported progress %v", out.Checked, got)
		}
	})

	for _, token := range []string{"demo-viewer", "demo-editor", "demo-admin"} {
		if strings.Count(stderr.String(), token) != 1 {
			t.Errorf("the bearer %s appears in the log other than in its one announcement:\n%s", token, stderr)
		}
	}
}

// status posts a tools/list request to the MCP endpoint url with the
// Authorization header auth ("" = none) and returns the HTTP status.
func status(t *testing.T, url, auth string) int {
	t.Helper()
	resp := mcptest.Post(t, url, mcptest.Header(auth, "2025-11-25"), `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// TestStdio serves over pipes, as an MCP host would run the binary.
func TestStdio(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr logBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(context.Background(), []string{"-stdio", "-caller", "editor"}, inR, outW, &stderr)
		outW.Close()
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr.String())
	}
	if diff := cmp.Diff(editorTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("stdio editor sees (-want +got):\n%s", diff)
	}
	out, errText, err := call(t, cs, "whoami", nil)
	if err != nil || errText != "" {
		t.Fatalf("whoami: %v %s", err, errText)
	}
	if diff := cmp.Diff(map[string]any{"subject": "local", "roles": []any{"editor"}}, out); diff != "" {
		t.Errorf("whoami (-want +got):\n%s", diff)
	}
	if _, errText, err := call(t, cs, "get_item", map[string]any{"id": "itm-1"}); err != nil || errText != "" {
		t.Errorf("get_item: %v %s", err, errText)
	}
	// The client leaves: the service shuts down by itself.
	cs.Close()
	if err := await.Recv(t, done, "run's return"); err != nil {
		t.Errorf("run after the client left: %v", err)
	}
	if !strings.Contains(stderr.String(), `serving MCP over stdio as subject "local", role editor`) {
		t.Errorf("stdio announcement missing:\n%s", stderr.String())
	}
}

func TestRoutesCommand(t *testing.T) {
	t.Run("table", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"routes"}, nil, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("tools", "testdata", "routes.golden.json"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), out.String()); diff != "" {
			t.Errorf("routes (-golden +got):\n%s", diff)
		}
	})
	t.Run("role policy", func(t *testing.T) {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"routes", "-role", "auditor", "-behaviour", "read-only"}, nil, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		want := `[
  {
    "role": "auditor",
    "accessPolicies": [
      {
        "path": "^/catalog/api/v1/items$",
        "methods": [
          "GET"
        ],
        "effect": "allow"
      },
      {
        "path": "^/catalog/api/v1/items/[^/]+$",
        "methods": [
          "GET"
        ],
        "effect": "allow"
      }
    ]
  }
]
`
		if diff := cmp.Diff(want, out.String()); diff != "" {
			t.Errorf("routes -role (-want +got):\n%s", diff)
		}
	})
	t.Run("usage errors", func(t *testing.T) {
		for _, args := range [][]string{
			{"routes", "-role", "x"},
			{"routes", "-behaviour", "read-only"},
			{"routes", "-role", "x", "-behaviour", "readonly"},
			{"routes", "extra"},
		} {
			var stderr bytes.Buffer
			if err := run(context.Background(), args, nil, io.Discard, &stderr); !errors.Is(err, errUsage) || stderr.Len() == 0 {
				t.Errorf("run %q: error %v, stderr %q; want a usage error explained", args, err, stderr.String())
			}
		}
	})
}

// TestGeneratedPolicy closes the loop: a role policy printed by
// "routes -role ... -behaviour ..." given back with -policy, with a tokens
// file, grants exactly the tools of those behaviours.
func TestGeneratedPolicy(t *testing.T) {
	dir := t.TempDir()
	var policy bytes.Buffer
	if err := run(context.Background(), []string{"routes", "-role", "clerk", "-behaviour", "read-only,additive"}, nil, &policy, io.Discard); err != nil {
		t.Fatal(err)
	}
	policyFile := filepath.Join(dir, "policy.json")
	tokensFile := filepath.Join(dir, "tokens.json")
	os.WriteFile(policyFile, policy.Bytes(), 0o600)
	os.WriteFile(tokensFile, []byte(`[{"token": "clerk-token-1", "subject": "carol", "roles": ["clerk"]}]`), 0o600)
	url, stderr := start(t, "-policy", policyFile, "-tokens", tokensFile)
	cs := servertest.ConnectHTTP(t, url, "clerk-token-1", servertest.Options{})
	if diff := cmp.Diff([]string{"audit_catalog", "create_item", "get_item", "list_items", "whoami"}, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("clerk sees (-want +got):\n%s", diff)
	}
	if _, _, err := call(t, cs, "create_item", map[string]any{"name": "x", "quantity": 1}); err != nil {
		t.Errorf("clerk create_item: %v", err)
	}
	// The demo tokens are gone, and nothing announces tokens.
	if got := status(t, url, "Bearer demo-admin"); got != http.StatusUnauthorized {
		t.Errorf("demo-admin with -tokens: HTTP %d, want 401", got)
	}
	if s := stderr.String(); strings.Contains(s, "clerk-token-1") || strings.Contains(s, "LOCAL-DEMO") {
		t.Errorf("a tokens file's tokens were announced:\n%s", s)
	}
}

func TestAnonymous(t *testing.T) {
	url, stderr := start(t, "-anonymous", "viewer")
	if !strings.Contains(stderr.String(), "WARNING: -anonymous is ON") {
		t.Errorf("-anonymous not announced loudly:\n%s", stderr)
	}
	cs := servertest.ConnectHTTP(t, url, "", servertest.Options{})
	if diff := cmp.Diff(viewerTools, servertest.ToolNames(t, cs)); diff != "" {
		t.Errorf("anonymous sees (-want +got):\n%s", diff)
	}
	out, _, err := call(t, cs, "whoami", nil)
	if err != nil || out["subject"] != "anonymous" {
		t.Errorf("anonymous whoami: %v %v", out, err)
	}
	// A token still counts, and a bad one is still refused.
	if diff := cmp.Diff(adminTools, servertest.ToolNames(t, servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{}))); diff != "" {
		t.Errorf("admin with -anonymous sees (-want +got):\n%s", diff)
	}
	if got := status(t, url, "Bearer nope"); got != http.StatusUnauthorized {
		t.Errorf("bad token with -anonymous: HTTP %d, want 401", got)
	}
}

// recordingCatalog is an external catalog (for -upstream) that records
// the Authorization header of every request.
func recordingCatalog(t *testing.T) (*httptest.Server, *catalog.Store, func() []string) {
	store := catalog.NewStore(catalog.DemoItems()...)
	h := catalog.NewHandler(store)
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, store, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(auths)
	}
}

func TestExternalUpstream(t *testing.T) {
	srv, store, seen := recordingCatalog(t)
	url, _ := start(t, "-upstream", srv.URL)
	cs := servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{})
	created, errText, err := call(t, cs, "create_item", map[string]any{"name": "Kettle", "quantity": 1})
	if err != nil || errText != "" {
		t.Fatalf("create_item: %v %s", err, errText)
	}
	if it, ok := store.Get(created["id"].(string)); !ok || it.Name != "Kettle" {
		t.Errorf("the external catalog lacks the created item: %+v %v", it, ok)
	}
	if diff := cmp.Diff([]string{"POST /api/v1/items Bearer demo-admin"}, seen()); diff != "" {
		t.Errorf("upstream requests (-want +got):\n%s", diff)
	}
}

// rbacProxy serves [rbacProxyHandler] on 127.0.0.1: token
// "proxy-reader" may GET the catalog, "proxy-admin" do anything.
func rbacProxy(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(rbacProxyHandler())
	t.Cleanup(srv.Close)
	return srv
}

// rbacProxyHandler is a real RBAC proxy's auth API (authz/devproxy, the
// kit's dev-proxy) deciding with the embedded policy for two bearers:
// proxy-admin (role admin) and proxy-reader (role viewer: GET only).
func rbacProxyHandler() http.Handler {
	tokens, err := tokenfile.Parse([]byte(`[
		{"token": "proxy-admin", "subject": "admin@proxy", "roles": ["admin"]},
		{"token": "proxy-reader", "subject": "reader@proxy", "roles": ["viewer"]}]`), nil)
	if err != nil {
		panic(err)
	}
	h, err := devproxy.New(authz.MustParsePolicy(policy), tokens, devproxy.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	return h
}

func TestProxyAuth(t *testing.T) {
	proxy := rbacProxy(t)
	upstream, _, seen := recordingCatalog(t)
	url, _ := start(t, "-proxy-auth", proxy.URL, "-upstream", upstream.URL)

	reader := servertest.ConnectHTTP(t, url, "proxy-reader", servertest.Options{})
	if diff := cmp.Diff(viewerTools, servertest.ToolNames(t, reader)); diff != "" {
		t.Errorf("proxy-reader sees (-want +got):\n%s", diff)
	}
	if _, errText, err := call(t, reader, "get_item", map[string]any{"id": "itm-1"}); err != nil || errText != "" {
		t.Errorf("proxy-reader get_item: %v %s", err, errText)
	}
	admin := servertest.ConnectHTTP(t, url, "proxy-admin", servertest.Options{})
	if diff := cmp.Diff(adminTools, servertest.ToolNames(t, admin)); diff != "" {
		t.Errorf("proxy-admin sees (-want +got):\n%s", diff)
	}
	if _, errText, err := call(t, admin, "delete_item", map[string]any{"id": "itm-3"}); err != nil || errText != "" {
		t.Errorf("proxy-admin delete_item: %v %s", err, errText)
	}
	if diff := cmp.Diff([]string{
		"GET /api/v1/items/itm-1 Bearer proxy-reader",
		"DELETE /api/v1/items/itm-3 Bearer proxy-admin",
	}, seen()); diff != "" {
		t.Errorf("upstream requests (-want +got):\n%s", diff)
	}
	// A token the proxy does not know gets HTTP 401 before anything runs,
	// local tools included (they never ask the authorizer).
	stranger := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: servertest.BearerClient("stranger"), MaxRetries: -1}
	if cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(), stranger, nil); err == nil {
		_, callErr := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
		cs.Close()
		t.Errorf("a token the proxy does not know connected; whoami: %v", callErr)
	}
	resp := postRaw(t, url, "Bearer stranger", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tools/call whoami with a token the proxy does not know: HTTP %d, want 401", resp.StatusCode)
	}
}

// TestProxyAuthOutage: while the RBAC proxy is down, no token gets in,
// not even to a local tool, and the bearer never reaches the log.
func TestProxyAuthOutage(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	proxyURL := down.URL
	down.Close() // nothing listens there any more
	upstream, _, _ := recordingCatalog(t)
	url, stderr := start(t, "-proxy-auth", proxyURL, "-upstream", upstream.URL)
	resp := postRaw(t, url, "Bearer proxy-outage-secret", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`)
	if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
		t.Errorf("whoami during a proxy outage: HTTP %d, want a server error (neither served nor blamed on the token)", resp.StatusCode)
	}
	if strings.Contains(stderr.String(), "proxy-outage-secret") {
		t.Errorf("the bearer reached the log:\n%s", stderr)
	}
}

// postRaw posts one JSON-RPC message as a 2025-11-25 client would, with
// the given Authorization header.
func postRaw(t *testing.T, url, authorization, body string) *http.Response {
	t.Helper()
	resp, _ := postRawBody(t, url, authorization, body)
	return resp
}

// postRawBody is postRaw, also returning the response's body.
func postRawBody(t *testing.T, url, authorization, body string) (*http.Response, []byte) {
	t.Helper()
	resp := mcptest.Post(t, url, mcptest.Header(authorization, "2025-11-25"), body)
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func TestConfirmDestructive(t *testing.T) {
	url, stderr := start(t, "-confirm-destructive")
	if !strings.Contains(stderr.String(), "delete_item asks for confirmation") {
		t.Errorf("-confirm-destructive not announced:\n%s", stderr)
	}
	var asked []string
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked = append(asked, req.Params.Message)
			decision := permission.DenyOnce
			if len(asked) == 2 {
				decision = permission.AllowOnce
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
		},
	})
	cs := servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{Client: client})
	if _, errText, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"}); err != nil || !strings.Contains(errText, "denied") {
		t.Errorf("refused delete: %v %q", err, errText)
	}
	if _, errText, err := call(t, cs, "get_item", map[string]any{"id": "itm-1"}); err != nil || errText != "" {
		t.Errorf("itm-1 after a refused delete: %v %s", err, errText)
	}
	if out, errText, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"}); err != nil || out["deleted"] != true {
		t.Errorf("confirmed delete: %v %v %s", out, err, errText)
	}
	if len(asked) != 2 || !strings.HasPrefix(asked[0], "Delete item itm-1?") {
		t.Errorf("asked %q", asked)
	}
}

func TestFlagErrors(t *testing.T) {
	dir := t.TempDir()
	badTokens := filepath.Join(dir, "tokens.json")
	os.WriteFile(badTokens, []byte(`[{"token": "a b", "subject": "", "roles": ["root"]}, {"token": "tok-1", "subject": "x"}, {"token": "tok-1", "subject": "y"}]`), 0o600)
	badPolicy := filepath.Join(dir, "policy.json")
	os.WriteFile(badPolicy, []byte(`[{"role": "viewer", "accessPolicies": [{"path": "(", "methods": ["GET"], "effect": "allow"}]}]`), 0o600)
	auditorPolicy := filepath.Join(dir, "auditor.json")
	os.WriteFile(auditorPolicy, []byte(`[{"role": "auditor", "accessPolicies": [{"path": "^/catalog/", "methods": ["GET"], "effect": "allow"}]}]`), 0o600)
	tests := []struct {
		args []string
		want string // in the error or on stderr
	}{
		{[]string{"-proxy-auth", "http://127.0.0.1:1", "-policy", "p.json"}, "-proxy-auth and -policy exclude each other"},
		{[]string{"-stdio", "-anonymous", "viewer"}, "-anonymous applies to HTTP only"},
		{[]string{"-caller", "admin"}, "-caller applies to -stdio only"},
		{[]string{"-upstream", "http://127.0.0.1:1/prefix"}, "must be an origin"},
		{[]string{"-upstream", "127.0.0.1:1"}, "-upstream: "},
		{[]string{"-upstream", "ftp://127.0.0.1:1"}, "scheme must be http or https"},
		{[]string{"-proxy-auth", "rbac:8080"}, "not an http(s) URL"},
		{[]string{"-stdio", "-caller", "root"}, `the policy has no role "root"`},
		{[]string{"-anonymous", "root"}, `the policy has no role "root"`},
		{[]string{"-tokens", badTokens}, "entry 0: the token holds white space"},
		{[]string{"-tokens", badTokens}, "entry 2: duplicate token"},
		{[]string{"-tokens", badTokens}, `the policy has no role "root"`},
		{[]string{"-tokens", filepath.Join(dir, "missing.json")}, "no such file"},
		{[]string{"-policy", badPolicy}, "-policy " + badPolicy},
		{[]string{"-policy", auditorPolicy}, "the demo tokens need roles that -policy " + auditorPolicy + " lacks: pass -tokens FILE"},
		{[]string{"-proxy-auth", "http://127.0.0.1:1", "-anonymous", "admin"}, "-anonymous needs a role policy"},
		{[]string{"extra"}, `unknown command "extra"`},
		{[]string{"-nope"}, "flag provided but not defined"},
		{[]string{"-addr", "127.0.0.1:0", "-upstream", "http://127.0.0.1:1"}, `warming service "catalog"`},
		{[]string{"-stdio", "-addr", "127.0.0.1:0"}, "-addr applies to HTTP only"},
	}
	for _, tt := range tests {
		// check refuses what serve refuses, but for what only a start
		// finds (an upstream that does not answer) and a positional
		// argument (a subcommand there).
		for _, args := range [][]string{tt.args, append([]string{"check"}, tt.args...)} {
			if args[0] == "check" && (strings.Contains(tt.want, "warming service") || strings.Contains(tt.want, "unknown command")) {
				continue
			}
			var stderr bytes.Buffer
			err := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			if err == nil {
				t.Errorf("run %q: no error", args)
				continue
			}
			if got := err.Error() + "\n" + stderr.String(); !strings.Contains(got, tt.want) {
				t.Errorf("run %q: %q does not contain %q", args, got, tt.want)
			}
			if strings.Contains(err.Error()+stderr.String(), `"a b"`) || strings.Contains(err.Error()+stderr.String(), "tok-1") {
				t.Errorf("run %q: a token appears in the error: %v", args, err)
			}
		}
	}
}

// TestHTTPCancellation: a client that gives up on a call over stateless
// HTTP stops the tool: the audit visits no further item.
func TestHTTPCancellation(t *testing.T) {
	upstream, _, seen := recordingCatalog(t)
	url, stderr := start(t, "-upstream", upstream.URL)
	progressed := make(chan struct{}, 10)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			progressed <- struct{}{}
		},
	})
	cs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{Client: client})
	ctx, cancel := context.WithCancel(context.Background())
	params := &mcp.CallToolParams{Name: "audit_catalog", Arguments: map[string]any{"delay_ms": 1000}}
	params.SetProgressToken("c")
	callErr := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		callErr <- err
	}()
	await.Recv(t, progressed, "the first item's progress") // the first item is visited; the audit waits before the next
	cancel()
	if err := await.Recv(t, callErr, "the call's error"); err == nil {
		t.Error("the cancelled call returned no error")
	}
	if !stderr.waitFor("tool=audit_catalog", "outcome=cancelled") {
		t.Fatalf("no cancelled audit_catalog call in the log:\n%s", stderr)
	}
	// The list and 3 gets would mean the audit ran to its end.
	if got := seen(); len(got) >= 4 {
		t.Errorf("the cancelled audit sent %d upstream requests: %q", len(got), got)
	}
}

// TestCheck: check with the serving flags validates without serving:
// the demo configuration is ok, with what it found; nothing listens.
func TestCheck(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"check", "-confirm-destructive"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("check = %v\n%s", err, &stderr)
	}
	if want := "example-service check: ok: 7 tools, roles admin, editor, viewer, upstreams catalog=embedded\n"; stdout.String() != want {
		t.Errorf("check printed %q, want %q", stdout.String(), want)
	}
	// An upstream that does not answer is no problem for check: it
	// contacts nothing.
	stdout.Reset()
	if err := run(context.Background(), []string{"check", "-upstream", "http://127.0.0.1:1"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatalf("check -upstream (nothing listening) = %v\n%s", err, &stderr)
	}
}
