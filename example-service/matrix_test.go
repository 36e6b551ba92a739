package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/example-service/tools"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/upstream"
)

// The service's features of the request-lifecycle issue for a client of
// MCP 2026-07-28 and one of 2025-11-25, each over in-memory transports
// (the server the flags describe, built from the pieces serve assembles)
// and over HTTP (the whole service, run as main runs it).

// A svcCombo is a transport and a protocol version.
type svcCombo struct {
	name    string
	http    bool
	version string
}

var svcCombos = []svcCombo{
	{"in-memory/2026-07-28", false, "2026-07-28"},
	{"in-memory/2025-11-25", false, "2025-11-25"},
	{"http/2026-07-28", true, "2026-07-28"},
	{"http/2025-11-25", true, "2025-11-25"},
}

// connect serves the catalog at upstream with the service the flags args
// describe, and connects client (nil: a plain one) as the caller of the
// demo token. It returns the session and the service's log.
func (m svcCombo) connect(t *testing.T, args []string, upstream, token string, client *mcp.Client) (*mcp.ClientSession, *logBuffer) {
	t.Helper()
	args = append(slices.Clip(args), "-upstream", upstream)
	opts := servertest.Options{ProtocolVersion: m.version, Client: client}
	if m.http {
		url, stderr := start(t, args...)
		// Before the service stops: a connection the client dialed and
		// never used would hold its shutdown for seconds.
		t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
		return servertest.ConnectHTTP(t, url, token, opts), stderr
	}
	log := &logBuffer{url: make(chan string, 1)}
	logger := slog.New(slog.NewTextHandler(log, nil))
	s := memoryServer(t, upstream, slices.Contains(args, "-confirm-destructive"), logger)
	var tokens []struct {
		Token, Subject string
		Roles          []string
	}
	if err := json.Unmarshal(demoTokens, &tokens); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(tokens, func(e struct {
		Token, Subject string
		Roles          []string
	}) bool {
		return e.Token == token
	})
	if i < 0 {
		t.Fatalf("no demo token %q", token)
	}
	caller := authz.Caller{Subject: tokens[i].Subject, Roles: tokens[i].Roles, Bearer: token}
	return servertest.Connect(t, s, &caller, opts), log
}

// memoryServer is example-service's server as the kit assembles it, for
// in-memory clients: the embedded policy, the tools, and a catalog
// client at origin behind authz's upstream transport; with confirm,
// delete_item asks (-confirm-destructive).
func memoryServer(t *testing.T, origin string, confirm bool, logger *slog.Logger) *mcp.Server {
	t.Helper()
	pol := authz.MustParsePolicy(policy)
	d := &tools.Deps{Clients: loggedEndpoints{
		Endpoints: upstream.Endpoints{catalog.ServiceKey: {Origin: origin, Client: &http.Client{
			Transport: authz.Transport(http.DefaultTransport, catalog.ServiceKey, origin, pol, authz.Options{Logger: logger}),
		}}},
		log: logger,
	}}
	if confirm {
		d.Confirm = permission.New(permission.Options{Principal: func(ctx context.Context, _ *mcp.CallToolRequest) string {
			c, _ := authz.CallerFromContext(ctx)
			return c.Subject
		}})
	}
	s, err := server.New(server.Options{Name: "example-service", Logger: logger, Authorizer: pol, Instructions: command().Instructions},
		server.Install(tools.Registry, d))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// loggedEndpoints are fixed upstream clients with the service's logger,
// as the kit's service.Upstreams have it.
type loggedEndpoints struct {
	upstream.Endpoints
	log *slog.Logger
}

func (e loggedEndpoints) Logger() *slog.Logger { return e.log }

// TestMatrixConfirmDestructive: with -confirm-destructive, delete_item
// asks "Delete item X?" and deletes only on yes, for a 2026 client
// (input_required) and a 2025 one (elicitation) in memory, and for a 2026
// client over HTTP. A 2025 client over stateless HTTP cannot be asked:
// the deletion is refused cleanly and nothing is deleted.
func TestMatrixConfirmDestructive(t *testing.T) {
	for _, m := range svcCombos {
		t.Run(m.name, func(t *testing.T) {
			upstream, store, _ := recordingCatalog(t)
			var (
				mu    sync.Mutex
				asked []string
			)
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
				ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					mu.Lock()
					defer mu.Unlock()
					asked = append(asked, req.Params.Message)
					decision := permission.DenyOnce
					if len(asked) == 2 {
						decision = permission.AllowOnce
					}
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
				},
			})
			cs, _ := m.connect(t, []string{"-confirm-destructive"}, upstream.URL, "demo-admin", client)
			canAsk := !m.http || m.version >= "2026-07-28"

			_, errText, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"})
			want := "permission denied by the user"
			if !canAsk {
				want = permission.ErrCannotAsk.Error()
			}
			if err != nil || !strings.Contains(errText, want) {
				t.Errorf("first delete: error %v, text %q; want a tool error containing %q", err, errText, want)
			}
			if _, ok := store.Get("itm-1"); !ok {
				t.Fatal("itm-1 deleted without a yes")
			}
			out, errText, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"})
			_, there := store.Get("itm-1")
			switch {
			case !canAsk && (err != nil || !strings.Contains(errText, want) || !there):
				t.Errorf("second delete: %v %v %q, itm-1 there: %v; want refused again", out, err, errText, there)
			case canAsk && (err != nil || out["deleted"] != true || there):
				t.Errorf("confirmed delete: %v %v %q, itm-1 there: %v; want deleted", out, err, errText, there)
			}
			mu.Lock()
			defer mu.Unlock()
			wantAsked := 2
			if !canAsk {
				wantAsked = 0
			}
			if len(asked) != wantAsked || slices.ContainsFunc(asked, func(q string) bool { return !strings.HasPrefix(q, "Delete item itm-1?") }) {
				t.Errorf("asked %q, want %d questions starting %q", asked, wantAsked, "Delete item itm-1?")
			}
		})
	}
}

// TestMatrixAnonymous: -anonymous ROLE makes HTTP callers without a token
// act as ROLE, for clients of both versions (in-memory transports carry
// no tokens: the flag applies to HTTP only).
func TestMatrixAnonymous(t *testing.T) {
	url, _ := start(t, "-anonymous", "viewer")
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			opts := servertest.Options{ProtocolVersion: version}
			cs := servertest.ConnectHTTP(t, url, "", opts)
			if diff := cmp.Diff(viewerTools, servertest.ToolNames(t, cs)); diff != "" {
				t.Errorf("anonymous sees (-want +got):\n%s", diff)
			}
			out, errText, err := call(t, cs, "whoami", nil)
			if err != nil || errText != "" || out["subject"] != "anonymous" {
				t.Errorf("anonymous whoami: %v %v %q", out, err, errText)
			}
			if _, _, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"}); err == nil {
				t.Error("the anonymous viewer called delete_item")
			}
			if diff := cmp.Diff(adminTools, servertest.ToolNames(t, servertest.ConnectHTTP(t, url, "demo-admin", opts))); diff != "" {
				t.Errorf("admin with -anonymous sees (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMatrixAudit: audit_catalog reports progress after each item, and a
// cancelled audit stops (visits no further item) while the session keeps
// serving.
func TestMatrixAudit(t *testing.T) {
	for _, m := range svcCombos {
		t.Run(m.name, func(t *testing.T) {
			upstream, _, seen := recordingCatalog(t)
			notes := make(chan mcp.ProgressNotificationParams, 16)
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{
				ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
					notes <- *req.Params
				},
			})
			cs, log := m.connect(t, nil, upstream.URL, "demo-viewer", client)

			params := &mcp.CallToolParams{Name: "audit_catalog"}
			params.SetProgressToken("a")
			res, err := cs.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				t.Fatalf("audit_catalog: %v %+v", err, res)
			}
			var out struct{ Checked int }
			data, _ := json.Marshal(res.StructuredContent)
			json.Unmarshal(data, &out)
			var got []mcp.ProgressNotificationParams
			for range out.Checked {
				got = append(got, receive(t, notes))
			}
			want := []mcp.ProgressNotificationParams{
				{ProgressToken: "a", Progress: 1, Total: 3, Message: "checked itm-1"},
				{ProgressToken: "a", Progress: 2, Total: 3, Message: "checked itm-2"},
				{ProgressToken: "a", Progress: 3, Total: 3, Message: "checked itm-3"},
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}

			before := len(seen())
			ctx, cancel := context.WithCancel(context.Background())
			params = &mcp.CallToolParams{Name: "audit_catalog", Arguments: map[string]any{"delay_ms": 1000}}
			params.SetProgressToken("c")
			callErr := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, params)
				callErr <- err
			}()
			receive(t, notes) // the first item is visited; the audit waits before the next
			cancel()
			if err := await.Recv(t, callErr, "the call's error"); err == nil {
				t.Error("the cancelled audit returned no error")
			}
			// The handler stopped: the second audit's log record (written
			// when the handler returns) says so.
			if rec := auditRecord(t, log, 2); !strings.Contains(rec, "outcome=cancelled") {
				t.Errorf("the cancelled audit's record: %s", rec)
			}
			// The list and the first item's get, no more.
			if got := seen()[before:]; len(got) != 2 {
				t.Errorf("the cancelled audit sent %q upstream, want the list and one get", got)
			}
			if _, errText, err := call(t, cs, "whoami", nil); err != nil || errText != "" {
				t.Errorf("whoami after the cancellation: %v %q", err, errText)
			}
		})
	}
}

// receive returns the next progress notification. The bound only guards
// against a hang when none comes; it is no performance assertion.
func receive(t *testing.T, notes chan mcp.ProgressNotificationParams) mcp.ProgressNotificationParams {
	t.Helper()
	select {
	case n := <-notes:
		return n
	case <-time.After(10 * time.Second):
		t.Fatal("no progress notification came")
		return mcp.ProgressNotificationParams{}
	}
}

// auditRecord waits for the n-th audit_catalog call record in log and
// returns it. The bound only guards against a hang.
func auditRecord(t *testing.T, log *logBuffer, n int) string {
	t.Helper()
	for range 3000 {
		var recs []string
		for _, line := range strings.Split(log.String(), "\n") {
			if strings.Contains(line, "tools/call") && strings.Contains(line, "tool=audit_catalog") {
				recs = append(recs, line)
			}
		}
		if len(recs) >= n {
			return recs[n-1]
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no audit_catalog call record %d in the log:\n%s", n, log)
	return ""
}

// TestVisibilityMatrix pins who sees what: real clients of the service's
// server, one per role of the embedded policy, list the tools of the
// golden matrix (refresh with go test ./example-service -update), and
// "routes -matrix", computed from the route table and the policy
// without a server, prints that same matrix.
func TestVisibilityMatrix(t *testing.T) {
	s := memoryServer(t, "http://catalog.invalid", false, slog.New(slog.DiscardHandler))
	const file = "testdata/matrix.txt"
	servertest.CheckVisibility(t, s, file, authz.MustParsePolicy(policy).Roles()...)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), runRoutes(t, "-matrix")); diff != "" {
		t.Errorf("routes -matrix differs from what the server lists (-server +routes):\n%s", diff)
	}
}
