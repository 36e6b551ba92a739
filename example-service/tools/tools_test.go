package tools_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// policy is the test's authorizer for denials: viewers may read, and
// nothing else.
var policy = authz.MustParsePolicy([]byte(`[{"role": "viewer", "accessPolicies": [
	{"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}]`))

// catalogAPI is an httptest catalog that records every request it receives
// as "METHOD escaped-path".
type catalogAPI struct {
	store *catalog.Store
	url   string

	mu   sync.Mutex
	seen []string
}

func newUpstream(t *testing.T) *catalogAPI {
	t.Helper()
	u := &catalogAPI{store: catalog.NewStore(catalog.DemoItems()...)}
	h := catalog.NewHandler(u.store)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.mu.Lock()
		u.seen = append(u.seen, r.Method+" "+r.URL.EscapedPath())
		u.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

func (u *catalogAPI) requests() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.seen...)
}

// connect installs the registry on a fresh server whose callers are
// caller, against up, and returns a connected client session. The
// catalog's client transport is authz's upstream transport with a, which
// refuses every request outside the calling tool's declared routes: the
// tests prove that each tool declares every route it uses.
func connect(t *testing.T, up *catalogAPI, caller authz.Caller, a authz.Authorizer, copts *mcp.ClientOptions) (*mcp.ClientSession, *mcp.Server) {
	return connectWith(t, up, caller, a, copts, nil, nil)
}

// connectWith is connect with a client session's options and a change to
// the dependency container.
func connectWith(t *testing.T, up *catalogAPI, caller authz.Caller, a authz.Authorizer, copts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions, change func(*tools.Deps)) (*mcp.ClientSession, *mcp.Server) {
	t.Helper()
	ctx := context.Background()
	deps := &tools.Deps{Clients: upstream.Endpoints{catalog.ServiceKey: {
		Origin: up.url,
		Client: &http.Client{Transport: authz.Transport(nil, catalog.ServiceKey, up.url, a, authz.Options{})},
	}}}
	if change != nil {
		change(deps)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "example-service-test", Version: "v0"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(authz.WithCaller(ctx, caller), method, req)
		}
	})
	tools.Registry.Install(s, deps)
	cs := mcptest.Connect(t, s, &mcptest.Options{
		Client:        mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "v0"}, copts),
		Session:       sopts,
		ServerContext: ctx,
	})
	return cs, s
}

var alice = authz.Caller{Subject: "alice", Roles: []string{"editor", "viewer"}, Bearer: "secret"}

func TestTools(t *testing.T) {
	tests := []struct {
		name     string
		tool     string
		args     map[string]any
		want     string   // structured content as JSON, or the error text of an isError result
		wantErr  bool     // want an isError result
		upstream []string // the requests the catalog must have received
	}{
		{
			name:     "list",
			tool:     "list_items",
			want:     `{"items":[{"id":"itm-1","name":"Espresso beans, 1 kg","quantity":12},{"id":"itm-2","name":"Milk jug","quantity":4},{"id":"itm-3","name":"Paper filters (100)","quantity":0}]}`,
			upstream: []string{"GET /api/v1/items"},
		},
		{
			name:     "get",
			tool:     "get_item",
			args:     map[string]any{"id": "itm-2"},
			want:     `{"id":"itm-2","name":"Milk jug","quantity":4}`,
			upstream: []string{"GET /api/v1/items/itm-2"},
		},
		{
			name:     "get unknown",
			tool:     "get_item",
			args:     map[string]any{"id": "nope"},
			want:     `item "nope" not found`,
			wantErr:  true,
			upstream: []string{"GET /api/v1/items/nope"},
		},
		{
			name:    "get cannot climb, refused before sending",
			tool:    "get_item",
			args:    map[string]any{"id": "../../admin"},
			want:    `invalid argument "id": value "../../admin" holds '/', which an upstream may read as a path separator`,
			wantErr: true,
		},
		{
			name:    "get dot-dot refused before sending",
			tool:    "get_item",
			args:    map[string]any{"id": ".."},
			want:    `invalid argument "id": value ".." would climb a path segment`,
			wantErr: true,
		},
		{
			name:    "get empty id refused by the schema",
			tool:    "get_item",
			args:    map[string]any{"id": ""},
			want:    `minLength`,
			wantErr: true,
		},
		{
			name:     "update",
			tool:     "update_item",
			args:     map[string]any{"id": "itm-2", "name": "Milk jug, steel", "quantity": 5},
			want:     `{"id":"itm-2","name":"Milk jug, steel","quantity":5}`,
			upstream: []string{"PUT /api/v1/items/itm-2"},
		},
		{
			name:     "update unknown",
			tool:     "update_item",
			args:     map[string]any{"id": "nope", "name": "x", "quantity": 1},
			want:     `item "nope" not found`,
			wantErr:  true,
			upstream: []string{"PUT /api/v1/items/nope"},
		},
		{
			name:     "update blank name refused upstream",
			tool:     "update_item",
			args:     map[string]any{"id": "itm-2", "name": "  ", "quantity": 1},
			want:     `upstream answered 400 Bad Request: name is required`,
			wantErr:  true,
			upstream: []string{"PUT /api/v1/items/itm-2"},
		},
		{
			name:     "delete",
			tool:     "delete_item",
			args:     map[string]any{"id": "itm-3"},
			want:     `{"id":"itm-3","deleted":true}`,
			upstream: []string{"DELETE /api/v1/items/itm-3"},
		},
		{
			name:     "delete unknown",
			tool:     "delete_item",
			args:     map[string]any{"id": "nope"},
			want:     `item "nope" not found`,
			wantErr:  true,
			upstream: []string{"DELETE /api/v1/items/nope"},
		},
		{
			name:    "create with a negative quantity refused by the schema",
			tool:    "create_item",
			args:    map[string]any{"name": "x", "quantity": -1},
			want:    `minimum`,
			wantErr: true,
		},
		{
			name:    "create without a quantity refused by the schema",
			tool:    "create_item",
			args:    map[string]any{"name": "x"},
			want:    `quantity`,
			wantErr: true,
		},
		{
			name: "whoami",
			tool: "whoami",
			want: `{"subject":"alice","roles":["editor","viewer"]}`,
		},
		{
			name:     "audit",
			tool:     "audit_catalog",
			want:     `{"checked":3,"outOfStock":["itm-3"],"vanished":[],"totalQuantity":16}`,
			upstream: []string{"GET /api/v1/items", "GET /api/v1/items/itm-1", "GET /api/v1/items/itm-2", "GET /api/v1/items/itm-3"},
		},
		{
			name:    "audit delay out of range",
			tool:    "audit_catalog",
			args:    map[string]any{"delay_ms": 1001},
			want:    `maximum`,
			wantErr: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			cs, _ := connect(t, up, alice, authz.AllowAll(), nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatalf("CallTool: %v", err)
			}
			text := resultText(t, res)
			if res.IsError != tt.wantErr {
				t.Fatalf("IsError = %v, want %v (content %q)", res.IsError, tt.wantErr, text)
			}
			if tt.wantErr {
				if !strings.Contains(text, tt.want) {
					t.Errorf("error text %q does not contain %q", text, tt.want)
				}
			} else {
				var got, want any
				data, _ := json.Marshal(res.StructuredContent)
				json.Unmarshal(data, &got)
				if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("structured content mismatch (-want +got):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tt.upstream, up.requests()); diff != "" {
				t.Errorf("upstream requests mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func resultText(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestCreateReturnsTheNewItem: create_item answers with the item the
// catalog created, id included, and the item is there afterwards.
func TestCreateReturnsTheNewItem(t *testing.T) {
	up := newUpstream(t)
	cs, _ := connect(t, up, alice, authz.AllowAll(), nil)
	ctx := context.Background()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": "Grinder", "quantity": 2}})
	if err != nil || res.IsError {
		t.Fatalf("create_item: %v %q", err, resultText(t, res))
	}
	var created catalog.Item
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &created); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(created.ID, "itm-") || created.Name != "Grinder" || created.Quantity != 2 {
		t.Fatalf("create_item returned %+v", created)
	}
	if got, ok := up.store.Get(created.ID); !ok || got != created {
		t.Errorf("store has %+v, %v; want %+v", got, ok, created)
	}
	if diff := cmp.Diff([]string{"POST /api/v1/items"}, up.requests()); diff != "" {
		t.Errorf("upstream requests mismatch (-want +got):\n%s", diff)
	}
}

func TestWhoamiWithoutCaller(t *testing.T) {
	// A server that puts no caller in the context: whoami says so rather
	// than inventing one.
	up := newUpstream(t)
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "v0"}, nil)
	tools.Registry.Install(s, &tools.Deps{Clients: upstream.Endpoints{catalog.ServiceKey: {Origin: up.url}}})
	ctx := context.Background()
	cs := mcptest.Connect(t, s, nil)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || resultText(t, res) != "no caller identity in this session" {
		t.Errorf("whoami without a caller: IsError %v, %q", res.IsError, resultText(t, res))
	}
}

func TestListTools(t *testing.T) {
	cs, _ := connect(t, newUpstream(t), alice, authz.AllowAll(), nil)
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		Name                                  string
		ReadOnly, Destructive, Idempotent, OW bool
		In, Out                               bool
	}
	var got []row
	for _, tl := range res.Tools {
		a := tl.Annotations
		got = append(got, row{tl.Name, a.ReadOnlyHint, *a.DestructiveHint, a.IdempotentHint, *a.OpenWorldHint, tl.InputSchema != nil, tl.OutputSchema != nil})
	}
	want := []row{
		{"audit_catalog", true, false, true, false, true, true},
		{"create_item", false, false, false, false, true, true},
		{"delete_item", false, true, true, false, true, true},
		{"get_item", true, false, true, false, true, true},
		{"list_items", true, false, true, false, true, true},
		{"update_item", false, true, true, false, true, true},
		{"whoami", true, false, true, false, true, true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	// The whole wire definitions (descriptions, schemas) are a golden
	// file too: a schema change shows up in review.
	data, err := json.MarshalIndent(res.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "tools.golden.json", append(data, '\n'))
}

func TestAuditProgress(t *testing.T) {
	notes := make(chan mcp.ProgressNotificationParams, 10)
	cs, _ := connect(t, newUpstream(t), alice, authz.AllowAll(), &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			notes <- *req.Params
		},
	})
	params := &mcp.CallToolParams{Name: "audit_catalog"}
	params.SetProgressToken("audit-1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("audit_catalog: %v %q", err, resultText(t, res))
	}
	// The client may handle notifications after the response: wait for
	// the three.
	var got []mcp.ProgressNotificationParams
	for range 3 {
		got = append(got, await.Recv(t, notes, "the next notification"))
	}
	want := []mcp.ProgressNotificationParams{
		{ProgressToken: "audit-1", Progress: 1, Total: 3, Message: "checked itm-1"},
		{ProgressToken: "audit-1", Progress: 2, Total: 3, Message: "checked itm-2"},
		{ProgressToken: "audit-1", Progress: 3, Total: 3, Message: "checked itm-3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress mismatch (-want +got):\n%s", diff)
	}
}

// TestAuditCancellation cancels an audit after its first item: the
// handler stops (it returns the context's error) without visiting the
// remaining items, and the session keeps serving.
func TestAuditCancellation(t *testing.T) {
	up := newUpstream(t)
	firstItem := make(chan struct{}, 3)
	handlerDone := make(chan string, 1)
	cs, s := connect(t, up, alice, authz.AllowAll(), &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			firstItem <- struct{}{}
		},
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/call" {
				text := fmt.Sprint(err)
				if r, ok := res.(*mcp.CallToolResult); ok && r != nil {
					text = resultText(t, r)
				}
				handlerDone <- text
			}
			return res, err
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	params := &mcp.CallToolParams{Name: "audit_catalog", Arguments: map[string]any{"delay_ms": 1000}}
	params.SetProgressToken("audit-2")
	callErr := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, params)
		callErr <- err
	}()
	await.Recv(t, firstItem, "the first item")
	cancel()
	if err := await.Recv(t, callErr, "the call's error"); err == nil {
		t.Error("CallTool after cancellation: no error")
	}
	if got := await.Recv(t, handlerDone, "the handler's end"); !strings.Contains(got, "context canceled") {
		t.Errorf("the handler ended with %q, want its context's cancellation", got)
	}
	// 1 list and 3 gets would mean the audit ran to its end.
	if n := len(up.requests()); n >= 4 {
		t.Errorf("the cancelled audit sent %d upstream requests: %q", n, up.requests())
	}
	// The session keeps serving.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.IsError {
		t.Errorf("whoami after a cancellation: %v", err)
	}
}

// TestRouteTable keeps the route table as a golden file: a change to what
// a tool may reach shows up in review. Refresh with -update.
func TestRouteTable(t *testing.T) {
	got, err := json.MarshalIndent(tools.Registry.Table(), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "routes.golden.json", append(got, '\n'))
}

// checkGolden compares got with testdata/name, which -update rewrites.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden.Check(t, filepath.Join("testdata", name), got)
}

// TestRoutesAreTheCatalogs: every route a tool declares is one the
// catalog serves, value for value.
func TestRoutesAreTheCatalogs(t *testing.T) {
	known := map[tool.Route]bool{}
	for _, r := range catalog.Routes() {
		known[r] = true
	}
	for _, c := range tools.Registry.Calls() {
		for _, r := range c.Routes {
			if !known[r] {
				t.Errorf("tool %s declares %s, which the catalog does not serve", c.Tool, r)
			}
		}
	}
}

// TestUpstreamDenied: a tool whose upstream request the authorizer
// refuses answers with authz's fixed texts, and nothing reaches the
// catalog. (The server's middleware would hide such tools; this is the
// transport's own guard behind it.)
func TestUpstreamDenied(t *testing.T) {
	tests := []struct {
		name   string
		caller authz.Caller
		tool   string
		args   map[string]any
		want   string
	}{
		{"viewer deletes", authz.Caller{Subject: "vic", Roles: []string{"viewer"}}, "delete_item", map[string]any{"id": "itm-1"}, "not authorized (insufficient_scope)"},
		{"viewer creates", authz.Caller{Subject: "vic", Roles: []string{"viewer"}}, "create_item", map[string]any{"name": "x", "quantity": 1}, "not authorized (insufficient_scope)"},
		{"nobody lists", authz.Caller{}, "list_items", nil, "not authenticated"},
		{"unknown role audits", authz.Caller{Subject: "mallory", Roles: []string{"intruder"}}, "audit_catalog", nil, "not authorized (insufficient_scope)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			cs, _ := connect(t, up, tt.caller, policy, nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args})
			if err != nil {
				t.Fatal(err)
			}
			if got := resultText(t, res); !res.IsError || got != tt.want {
				t.Errorf("IsError %v, text %q; want an error %q", res.IsError, got, tt.want)
			}
			if got := up.requests(); len(got) != 0 {
				t.Errorf("the catalog received %q, want nothing", got)
			}
		})
	}
	// The same policy lets a viewer read.
	up := newUpstream(t)
	cs, _ := connect(t, up, authz.Caller{Subject: "vic", Roles: []string{"viewer"}, Bearer: "tok"}, policy, nil)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "audit_catalog"})
	if err != nil || res.IsError {
		t.Fatalf("viewer audit_catalog: %v %q", err, resultText(t, res))
	}
}

// TestUpstreamOutage: when the catalog is down, fails or answers
// nonsense, every catalog tool answers a fixed text that says which
// (the cause of a failure of the request logged, never the bearer), and
// the session keeps serving.
func TestUpstreamOutage(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // connection refused from now on
	failing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "<html>upstream exploded</html>", http.StatusInternalServerError)
	}))
	t.Cleanup(failing.Close)
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"items": [{"id": 42`)
	}))
	t.Cleanup(garbage.Close)

	calls := []struct {
		tool string
		args map[string]any
	}{
		{"list_items", nil},
		{"get_item", map[string]any{"id": "itm-1"}},
		{"create_item", map[string]any{"name": "x", "quantity": 1}},
		{"update_item", map[string]any{"id": "itm-1", "name": "x", "quantity": 1}},
		{"delete_item", map[string]any{"id": "itm-1"}},
		{"audit_catalog", nil},
	}
	for _, backend := range []struct {
		name, url string
		want      string // every tool's error text
		logged    string // the log message of each call's cause, "" for none
	}{
		{"connection refused", down.URL, "upstream unavailable", "upstream: request failed"},
		{"HTTP 500", failing.URL, "upstream answered 500 Internal Server Error", ""},
		{"truncated JSON", garbage.URL, "upstream sent an invalid response", "upstream: invalid response"},
	} {
		t.Run(backend.name, func(t *testing.T) {
			var logs syncbuf.Buffer
			cs, _ := connectWith(t, &catalogAPI{url: backend.url}, alice, authz.AllowAll(), nil, nil, func(d *tools.Deps) {
				d.Clients = withLogger{d.Clients, slog.New(slog.NewTextHandler(&logs, nil))}
			})
			for _, c := range calls {
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: c.args})
				if err != nil {
					t.Fatalf("%s: %v", c.tool, err)
				}
				if got := resultText(t, res); !res.IsError || got != backend.want {
					t.Errorf("%s: IsError %v, text %q; want the error %q", c.tool, res.IsError, got, backend.want)
				}
			}
			want := 0
			if backend.logged != "" {
				want = len(calls)
			}
			if n := strings.Count(logs.String(), "level=ERROR"); n != want || backend.logged != "" && strings.Count(logs.String(), backend.logged) != want {
				t.Errorf("%d causes logged, want %d %q:\n%s", n, want, backend.logged, logs.String())
			}
			if strings.Contains(logs.String(), alice.Bearer) {
				t.Errorf("the log holds the bearer:\n%s", logs.String())
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
			if err != nil || res.IsError {
				t.Fatalf("whoami after the failures: %v, %q", err, resultText(t, res))
			}
		})
	}
}

// withLogger is Clients with a logger for the typed calls' failures, as
// the kit's service.Upstreams have.
type withLogger struct {
	upstream.Clients
	log *slog.Logger
}

func (w withLogger) Logger() *slog.Logger { return w.log }

// TestBearerForwarded: the catalog receives the caller's bearer.
func TestBearerForwarded(t *testing.T) {
	var got []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	cs, _ := connect(t, &catalogAPI{url: srv.URL}, alice, authz.AllowAll(), nil)
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "itm-1"}}); err != nil || res.IsError {
		t.Fatalf("get_item: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{"Bearer secret"}, got); diff != "" {
		t.Errorf("Authorization headers mismatch (-want +got):\n%s", diff)
	}
}

// TestConfirmDelete: with Deps.Confirm, delete_item asks the user first,
// over the 2026-07-28 multi-round-trip flow and over a 2025-11-25
// session's elicitation alike, and deletes only on "allow once".
func TestConfirmDelete(t *testing.T) {
	tests := []struct {
		name     string
		version  string // "" = the latest
		answer   *mcp.ElicitResult
		noAsk    bool // the client cannot be asked (no elicitation handler)
		want     string
		wantErr  bool
		upstream []string
	}{
		{name: "allowed", answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}},
			want: `{"deleted":true,"id":"itm-1"}`, upstream: []string{"DELETE /api/v1/items/itm-1"}},
		{name: "allowed, 2025", version: "2025-11-25", answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}},
			want: `{"deleted":true,"id":"itm-1"}`, upstream: []string{"DELETE /api/v1/items/itm-1"}},
		{name: "denied", answer: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.DenyOnce}},
			want: "permission denied by the user", wantErr: true},
		{name: "declined, 2025", version: "2025-11-25", answer: &mcp.ElicitResult{Action: "decline"},
			want: "permission denied by the user", wantErr: true},
		{name: "cannot ask", noAsk: true, want: permission.ErrCannotAsk.Error(), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := newUpstream(t)
			var asked []string
			copts := &mcp.ClientOptions{}
			if !tt.noAsk {
				copts.ElicitationHandler = func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked = append(asked, req.Params.Message)
					return tt.answer, nil
				}
			}
			cs, _ := connectWith(t, up, alice, authz.AllowAll(), copts, &mcp.ClientSessionOptions{ProtocolVersion: tt.version},
				func(d *tools.Deps) { d.Confirm = permission.New(permission.Options{}) })
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": "itm-1"}})
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(t, res)
			if res.IsError != tt.wantErr {
				t.Fatalf("IsError = %v, want %v (%q)", res.IsError, tt.wantErr, text)
			}
			if !tt.noAsk && (len(asked) != 1 || !strings.HasPrefix(asked[0], "Delete item itm-1?")) {
				t.Errorf("asked %q, want one question starting %q", asked, "Delete item itm-1?")
			}
			if tt.want != "" && !strings.Contains(text, tt.want) {
				t.Errorf("result %q does not contain %q", text, tt.want)
			}
			if diff := cmp.Diff(tt.upstream, up.requests()); diff != "" {
				t.Errorf("upstream requests mismatch (-want +got):\n%s", diff)
			}
			if _, ok := up.store.Get("itm-1"); ok == (tt.upstream != nil) {
				t.Errorf("itm-1 still there: %v, want %v", ok, tt.upstream == nil)
			}
		})
	}
}

// TestIDsStayInTheirSegment: whatever the id, get_item sends it as
// exactly one escaped segment of the item route, which the catalog
// answers (the seeded item, or its not found for the same id), or
// nothing at all: an id holding a separator, which an upstream decoding
// %2F would split, or a dot segment.
func TestIDsStayInTheirSegment(t *testing.T) {
	tests := []struct {
		id       string
		wantPath string // "" = refused before sending
	}{
		{"itm-1", "/api/v1/items/itm-1"},
		{"x?y=1#z", "/api/v1/items/x%3Fy=1%23z"},
		{"a b", "/api/v1/items/a%20b"},
		{"50%", "/api/v1/items/50%25"},
		{"..", ""},
		{".", ""},
		{"a\nb", ""},
		{"a/b", ""},
		{"../../admin", ""},
		{`..\admin`, ""},
		{"%2e%2e", ""},
		{"..%252Fadmin", ""},
		{"..;x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			up := newUpstream(t)
			cs, _ := connect(t, up, alice, authz.AllowAll(), nil)
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": tt.id}})
			if err != nil {
				t.Fatal(err)
			}
			text := resultText(t, res)
			got := up.requests()
			if tt.wantPath == "" {
				if !res.IsError || !strings.HasPrefix(text, `invalid argument "id": `) || len(got) != 0 {
					t.Errorf("get_item %q: %q, sent %q; want an invalid argument before sending", tt.id, text, got)
				}
				return
			}
			if diff := cmp.Diff([]string{"GET " + tt.wantPath}, got); diff != "" {
				t.Errorf("requests mismatch (-want +got):\n%s", diff)
			}
			// Every id here but the seeded one is unknown to the store: the
			// request reached the item route, not another resource.
			if want := fmt.Sprintf("upstream answered 404 Not Found: item %q not found", tt.id); tt.id != "itm-1" && text != want {
				t.Errorf("get_item %q: %q, want %q", tt.id, text, want)
			}
		})
	}
}
