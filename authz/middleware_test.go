package authz_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/gob"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

var protocolVersions = []struct{ name, version string }{
	{"2026-07-28", ""}, // the SDK's default
	{"2025-11-25", "2025-11-25"},
}

func TestVisibility(t *testing.T) {
	tests := []struct {
		name  string
		roles []string
		want  []string
	}{
		{"viewer", []string{"viewer"}, []string{"about", "get_item", "list_items", "report", "sneaky"}},
		// report is visible through its second route alone.
		{"reporter", []string{"reporter"}, []string{"about", "report"}},
		// editor denies GET /items itself (deny overrides allow within a role).
		{"editor", []string{"editor"}, []string{"about", "create_item", "delete_item", "get_item"}},
		// Union: viewer allows what editor denies.
		{"viewer+editor", []string{"editor", "viewer"}, []string{"about", "create_item", "delete_item", "get_item", "list_items", "report", "sneaky"}},
		// Local tools survive an all-deny and unknown roles.
		{"all-deny", []string{"nobody"}, []string{"about"}},
		{"unknown role", []string{"ghost"}, []string{"about"}},
		{"all-deny and viewer", []string{"nobody", "viewer"}, []string{"about", "get_item", "list_items", "report", "sneaky"}},
	}
	for _, pv := range protocolVersions {
		for _, pageSize := range []int{0, 2} {
			for _, tt := range tests {
				t.Run(fmt.Sprintf("%s/page%d/%s", pv.name, pageSize, tt.name), func(t *testing.T) {
					h := newHarness(t, harnessOptions{
						authorizer:      testPolicy(t),
						skip:            []string{"unmapped"},
						pageSize:        pageSize,
						protocolVersion: pv.version,
						caller:          &authz.Caller{Subject: "alice", Roles: tt.roles, Bearer: secretBearer},
					})
					got, scopes, err := h.listNames(t)
					if err != nil {
						t.Fatal(err)
					}
					if diff := cmp.Diff(tt.want, got); diff != "" {
						t.Errorf("tools/list (-want +got):\n%s", diff)
					}
					// Pages end at their last visible tool; a page without
					// one is skipped: at most 2 visible tools a page.
					if pageSize == 2 && len(scopes) < (len(tt.want)+1)/2 {
						t.Errorf("got %d pages, want at least %d (%d visible tools, at most 2 a page)", len(scopes), (len(tt.want)+1)/2, len(tt.want))
					}
					for i, s := range scopes {
						if s != "private" {
							t.Errorf("page %d: cacheScope = %q, want \"private\"", i, s)
						}
					}
				})
			}
		}
	}
}

// The raw list, without the middleware, is the control: it holds every
// tool and is public.
func TestVisibilityControlWithoutMiddleware(t *testing.T) {
	reg := newRegistry()
	s := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "v0.0.1"}, nil)
	reg.Install(s, &deps{})
	cs := connect(t, s, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 8 || res.CacheScope != "public" {
		t.Fatalf("raw list: %d tools, cacheScope %q; want 8, public", len(res.Tools), res.CacheScope)
	}
}

// asWireError returns the JSON-RPC error err carries.
func asWireError(t *testing.T, err error) *jsonrpc.Error {
	t.Helper()
	var we *jsonrpc.Error
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T) is not a JSON-RPC error", err, err)
	}
	return we
}

func TestHiddenToolAnswersLikeUnknownTool(t *testing.T) {
	for _, pv := range protocolVersions {
		t.Run(pv.name, func(t *testing.T) {
			h := newHarness(t, harnessOptions{
				authorizer:      testPolicy(t),
				skip:            []string{"unmapped"},
				protocolVersion: pv.version,
				caller:          &authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer},
			})
			// What the SDK itself answers for a tool it does not have.
			_, _, err := h.call(t, "no_such_tool", nil)
			if err == nil {
				t.Fatal("calling an unknown tool succeeded")
			}
			sdk, sdkText := asWireError(t, err), err.Error()
			if sdk.Code != jsonrpc.CodeInvalidParams || sdk.Message != `unknown tool "no_such_tool"` {
				t.Fatalf("the SDK's unknown-tool error is %d %q; the test's assumption is stale", sdk.Code, sdk.Message)
			}
			// create_item and delete_item are denied, unmapped is absent from the map.
			for _, name := range []string{"create_item", "delete_item", "unmapped"} {
				_, _, err := h.call(t, name, map[string]any{"id": "1"})
				if err == nil {
					t.Errorf("%s: hidden tool was called", name)
					continue
				}
				got := asWireError(t, err)
				want := &jsonrpc.Error{Code: sdk.Code, Message: strings.ReplaceAll(sdk.Message, "no_such_tool", name)}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("%s: error differs from an unknown tool's (-want +got):\n%s", name, diff)
				}
				if strings.ReplaceAll(err.Error(), name, "no_such_tool") != sdkText {
					t.Errorf("%s: client-side error text %q differs from an unknown tool's", name, err.Error())
				}
			}
			// A visible tool is callable, and its request reached the upstream.
			text, isErr, err := h.call(t, "get_item", map[string]any{"id": "42"})
			if err != nil || isErr {
				t.Fatalf("get_item: %q, isError=%v, %v", text, isErr, err)
			}
			if diff := cmp.Diff([]string{"GET /api/v1/items/42"}, h.upstream.sends()); diff != "" {
				t.Errorf("upstream received (-want +got):\n%s", diff)
			}
			if got := h.upstream.bearers; len(got) != 1 || got[0] != "Bearer "+secretBearer {
				t.Errorf("upstream Authorization = %q, want the caller's bearer", got)
			}
		})
	}
}

func TestUnmappedToolIsHidden(t *testing.T) {
	h := newHarness(t, harnessOptions{
		authorizer: authz.AllowAll(),
		skip:       []string{"unmapped"},
		caller:     &authz.Caller{Subject: "alice", Bearer: secretBearer},
	})
	names, _, err := h.listNames(t)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"about", "create_item", "delete_item", "get_item", "list_items", "report", "sneaky"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("tools/list with AllowAll (-want +got):\n%s", diff)
	}
	_, _, err = h.call(t, "unmapped", nil)
	if we := asWireError(t, err); we.Code != jsonrpc.CodeInvalidParams || we.Message != `unknown tool "unmapped"` {
		t.Errorf("calling unmapped: %v", err)
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q", got)
	}
}

func TestNoCallerFailsClosed(t *testing.T) {
	h := newHarness(t, harnessOptions{authorizer: authz.AllowAll(), caller: nil})
	_, _, err := h.listNames(t)
	if err == nil {
		t.Fatal("tools/list without a caller succeeded")
	}
	if we := asWireError(t, err); we.Code != jsonrpc.CodeInvalidRequest || we.Message != "not authenticated" {
		t.Errorf("tools/list without a caller: %d %q", we.Code, we.Message)
	}
	for _, name := range []string{"about", "get_item"} {
		_, _, err := h.call(t, name, map[string]any{"id": "1"})
		if we := asWireError(t, err); we.Code != jsonrpc.CodeInvalidParams || we.Message != fmt.Sprintf("unknown tool %q", name) {
			t.Errorf("calling %s without a caller: %v", name, err)
		}
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q", got)
	}
	errs := 0
	for _, r := range h.logs.records(t) {
		if r["level"] == "ERROR" && strings.Contains(r["msg"].(string), "without a caller") {
			errs++
		}
	}
	if errs != 3 {
		t.Errorf("%d error-level log records about the missing caller, want 3:\n%s", errs, h.logs)
	}
}

func TestMissingBearer(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}})
	_, _, err := h.listNames(t)
	if we := asWireError(t, err); we.Code != jsonrpc.CodeInvalidRequest || we.Message != "not authenticated" {
		t.Errorf("tools/list without a bearer: %v", err)
	}
	_, _, err = h.call(t, "get_item", map[string]any{"id": "1"})
	if we := asWireError(t, err); we.Message != `unknown tool "get_item"` {
		t.Errorf("tools/call without a bearer: %v", err)
	}
	// A local tool needs no decision.
	if text, isErr, err := h.call(t, "about", nil); err != nil || isErr {
		t.Errorf("about: %q %v %v", text, isErr, err)
	}
	if n := proxy.single.Load() + proxy.batch.Load(); n != 0 {
		t.Errorf("the proxy was asked %d times about a caller without a bearer", n)
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q", got)
	}
}

func TestUnknownBearerThroughProxy(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "mallory", Bearer: "forged"}})
	_, _, err := h.listNames(t)
	if we := asWireError(t, err); we.Message != "not authenticated" {
		t.Errorf("tools/list with a bearer the proxy refuses: %v", err)
	}
	if proxy.batch.Load() != 1 {
		t.Errorf("batch endpoint asked %d times, want 1", proxy.batch.Load())
	}
}

func TestOutageFailsClosed(t *testing.T) {
	for _, pv := range protocolVersions {
		t.Run(pv.name, func(t *testing.T) {
			proxy := newRBACProxy(t, testPolicy(t), testRoles)
			proxy.status.Store(500)
			h := newHarness(t, harnessOptions{authorizer: proxy.auth(), protocolVersion: pv.version,
				caller: &authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer}})

			_, _, err := h.listNames(t)
			if err == nil {
				t.Fatal("tools/list during an outage succeeded")
			}
			if we := asWireError(t, err); we.Code != jsonrpc.CodeInternalError || we.Message != "authorization service unavailable" {
				t.Errorf("tools/list during an outage: %d %q", we.Code, we.Message)
			}
			text, isErr, err := h.call(t, "get_item", map[string]any{"id": "1"})
			if err != nil || !isErr || text != "authorization service unavailable" {
				t.Errorf("tools/call during an outage: %q, isError=%v, %v; want the generic isError result", text, isErr, err)
			}
			if got := h.upstream.sends(); len(got) != 0 {
				t.Errorf("upstream received %q during an outage", got)
			}
			logs := h.logs.String()
			if strings.Contains(logs, secretBearer) {
				t.Errorf("the bearer was logged:\n%s", logs)
			}
			warns := 0
			for _, r := range h.logs.records(t) {
				if r["level"] == "WARN" && strings.Contains(fmt.Sprint(r["cause"]), "500 Internal Server Error") {
					warns++
				}
			}
			if warns != 2 {
				t.Errorf("%d warnings naming the cause (500), want 2 (list, call):\n%s", warns, logs)
			}
		})
	}
}

func TestOutageOfUnreachableProxy(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	proxy.Close()
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Bearer: secretBearer}})
	_, _, err := h.listNames(t)
	if we := asWireError(t, err); we.Message != "authorization service unavailable" {
		t.Errorf("tools/list with the proxy down: %v", err)
	}
	if strings.Contains(h.logs.String(), secretBearer) {
		t.Errorf("the bearer was logged:\n%s", h.logs)
	}
}

func TestDeniedAndOutageNeverSentUpstream(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Bearer: secretBearer}})

	// get_item is visible to the viewer; its template is allowed, this one item is not.
	text, isErr, err := h.call(t, "get_item", map[string]any{"id": "forbidden"})
	if err != nil || !isErr || text != "not authorized (insufficient_scope)" {
		t.Errorf("denied upstream request: %q, isError=%v, %v", text, isErr, err)
	}
	// The decision service fails between the guard and the upstream request.
	proxy.sstatus.Store(503)
	text, isErr, err = h.call(t, "get_item", map[string]any{"id": "7"})
	if err != nil || !isErr || text != "authorization service unavailable" {
		t.Errorf("upstream request during an outage: %q, isError=%v, %v", text, isErr, err)
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q", got)
	}
	proxy.sstatus.Store(0)
	if _, isErr, err := h.call(t, "get_item", map[string]any{"id": "7"}); err != nil || isErr {
		t.Fatalf("allowed request failed: %v %v", isErr, err)
	}
	if diff := cmp.Diff([]string{"GET /api/v1/items/7"}, h.upstream.sends()); diff != "" {
		t.Errorf("upstream received (-want +got):\n%s", diff)
	}
	if strings.Contains(h.logs.String(), secretBearer) {
		t.Errorf("the bearer was logged:\n%s", h.logs)
	}
}

func TestRouteOutsideDeclaredSetIsRefused(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Bearer: secretBearer}})
	text, isErr, err := h.call(t, "sneaky", nil)
	if err != nil || !isErr || text != "not authorized (insufficient_scope)" {
		t.Errorf("sneaky: %q, isError=%v, %v", text, isErr, err)
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q", got)
	}
	if n := proxy.single.Load(); n != 0 {
		t.Errorf("the proxy was asked %d times about an undeclared route", n)
	}
	found := false
	for _, r := range h.logs.records(t) {
		if r["level"] == "ERROR" && r["tool"] == "sneaky" && r["route"] == "GET /catalog/api/v1/admin" && strings.Contains(r["msg"].(string), "configuration bug") {
			found = true
		}
	}
	if !found {
		t.Errorf("no error-level record of the configuration bug:\n%s", h.logs)
	}
}

func TestCallerValuesCannotWidenRoute(t *testing.T) {
	tests := []struct {
		tool, id string
		wantSent string // "" = nothing sent
		wantText string
	}{
		{"get_item", "42", "GET /api/v1/items/42", ""},
		// get_item joins the id naively: Transport holds the line.
		{"get_item", "../admin", "", "not authorized (insufficient_scope)"},
		{"get_item", "../../../catalog/api/v1/items", "", "not authorized (insufficient_scope)"},
		{"get_item", "a/b", "", "not authorized (insufficient_scope)"},
		{"get_item", "%2e%2e", "", "not authorized (insufficient_scope)"},
		{"get_item", ".%2E", "", "not authorized (insufficient_scope)"},
		{"get_item", "", "", ""}, // schema: minLength 1
		// An escaped separator is refused too: an upstream that decodes
		// %2F (or takes "\\" for "/") would see another segment.
		{"get_item", "a%2Fb", "", "not authorized (insufficient_scope)"},
		{"get_item", "..%2Fadmin", "", "not authorized (insufficient_scope)"},
		{"get_item", "..%5Cadmin", "", "not authorized (insufficient_scope)"},
		// delete_item binds its route: values are escaped, dots and
		// separators refused before anything is sent.
		{"delete_item", "it's 42%", "DELETE /api/v1/items/it%27s%2042%25", ""},
		{"delete_item", "../../admin", "", ""},
		{"delete_item", "a/b", "", ""},
		{"delete_item", `a\b`, "", ""},
		{"delete_item", "..", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.id, func(t *testing.T) {
			h := newHarness(t, harnessOptions{authorizer: testPolicy(t),
				caller: &authz.Caller{Subject: "alice", Roles: []string{"viewer", "editor"}, Bearer: secretBearer}})
			text, isErr, err := h.call(t, tt.tool, map[string]any{"id": tt.id})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			if tt.wantSent != "" {
				want = []string{tt.wantSent}
				if isErr {
					t.Errorf("isError result %q", text)
				}
			} else if !isErr {
				t.Errorf("not an error: %q", text)
			}
			if tt.wantText != "" && text != tt.wantText {
				t.Errorf("text = %q, want %q", text, tt.wantText)
			}
			if diff := cmp.Diff(want, h.upstream.sends()); diff != "" {
				t.Errorf("upstream received (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRevocationBetweenListAndCall(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Bearer: secretBearer}})
	names, _, err := h.listNames(t)
	if err != nil {
		t.Fatal(err)
	}
	if !containsStr(names, "get_item") {
		t.Fatalf("get_item not listed before the revocation: %q", names)
	}
	// The viewer role loses everything.
	proxy.policy.Store(mustPolicy(t, `[{"role": "viewer", "accessPolicies": []}]`))
	_, _, err = h.call(t, "get_item", map[string]any{"id": "1"})
	if we := asWireError(t, err); we.Message != `unknown tool "get_item"` {
		t.Errorf("call after revocation: %v", err)
	}
	if got := h.upstream.sends(); len(got) != 0 {
		t.Errorf("upstream received %q after the revocation", got)
	}
	names, _, err = h.listNames(t)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"about"}, names); diff != "" {
		t.Errorf("tools/list after revocation (-want +got):\n%s", diff)
	}
}

// One AllowMany per list page, over the page's distinct routes.
func TestListAsksOncePerPage(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	h := newHarness(t, harnessOptions{authorizer: proxy.auth(), caller: &authz.Caller{Subject: "alice", Bearer: secretBearer}})
	if _, _, err := h.listNames(t); err != nil {
		t.Fatal(err)
	}
	if n := proxy.batch.Load(); n != 1 {
		t.Errorf("%d batch requests for one page, want 1", n)
	}
	want := []routeQuery{
		{Path: "/catalog/api/v1/items/{id}", Method: "DELETE"},
		{Path: "/catalog/api/v1/items/{id}", Method: "GET"},
		{Path: "/catalog/api/v1/items", Method: "GET"},
		{Path: "/catalog/api/v1/items", Method: "POST"},
		{Path: "/catalog/api/v1/reports", Method: "GET"},
	}
	got := proxy.bodies[0]
	sortQueries := cmp.Transformer("sort", func(q []routeQuery) map[routeQuery]bool {
		m := map[routeQuery]bool{}
		for _, x := range q {
			x.AuthResult = nil
			m[x] = true
		}
		return m
	})
	if len(got) != len(want) {
		t.Errorf("asked %d routes, want %d distinct: %v", len(got), len(want), got)
	}
	if diff := cmp.Diff(want, got, sortQueries); diff != "" {
		t.Errorf("routes asked (-want +got):\n%s", diff)
	}
}

func TestMiddlewarePanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil authorizer", func() { authz.Middleware(nil, nil, authz.Options{}) }, "authz: Middleware: nil Authorizer"},
		{"local with routes", func() {
			authz.Middleware(authz.AllowAll(), []*tool.Call{{Tool: "x", Local: true, Routes: []tool.Route{catalog("GET", "/a")}}}, authz.Options{})
		}, `authz: Middleware: tool "x" is Local and has routes`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := panicValue(tt.f); got != tt.want {
				t.Errorf("panic = %v, want %q", got, tt.want)
			}
		})
	}
}

func panicValue(f func()) (v any) {
	defer func() { v = recover() }()
	f()
	return nil
}

// TestListCursorsNameOnlyVisibleTools: the SDK's nextCursor names the
// last tool of its unfiltered page; a filtered page must never pass on a
// cursor naming a tool the caller does not see, and following the cursors
// still lists every visible tool once.
func TestListCursorsNameOnlyVisibleTools(t *testing.T) {
	for _, pageSize := range []int{1, 2, 3} {
		for _, roles := range [][]string{{"reporter"}, {"editor"}, {"viewer"}, {"nobody"}} {
			t.Run(fmt.Sprintf("page%d/%s", pageSize, roles[0]), func(t *testing.T) {
				h := newHarness(t, harnessOptions{
					authorizer: testPolicy(t),
					skip:       []string{"unmapped"},
					pageSize:   pageSize,
					caller:     &authz.Caller{Subject: "alice", Roles: roles, Bearer: secretBearer},
				})
				want, _, err := newHarness(t, harnessOptions{
					authorizer: testPolicy(t),
					skip:       []string{"unmapped"},
					caller:     &authz.Caller{Subject: "alice", Roles: roles, Bearer: secretBearer},
				}).listNames(t)
				if err != nil {
					t.Fatal(err)
				}
				visible := map[string]bool{}
				for _, n := range want {
					visible[n] = true
				}
				var got []string
				cursor := ""
				for pages := 0; ; pages++ {
					if pages > 20 {
						t.Fatal("more than 20 pages for 8 tools")
					}
					res, err := h.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
					if err != nil {
						t.Fatal(err)
					}
					for _, tl := range res.Tools {
						got = append(got, tl.Name)
					}
					if res.NextCursor == "" {
						break
					}
					named := cursorName(t, res.NextCursor)
					if !visible[named] {
						t.Errorf("a page's nextCursor names %q, which the caller does not see", named)
					}
					cursor = res.NextCursor
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("tools listed page by page (-want +got):\n%s", diff)
				}
			})
		}
	}
}

// cursorName decodes go-sdk's cursor: the gob-encoded name of the last
// tool of a page, base64url-encoded.
func cursorName(t *testing.T, cursor string) string {
	t.Helper()
	b, err := base64.URLEncoding.DecodeString(cursor)
	if err != nil {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	var tok struct{ LastUID string }
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&tok); err != nil {
		t.Fatalf("cursor %q: %v", cursor, err)
	}
	return tok.LastUID
}
