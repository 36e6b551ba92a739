package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// A distinctive token, so that its absence from logs means something.
const secretToken = "tok-SECRET-5e1f0c7a9b2d"

var testTokens = map[string]authz.Caller{
	secretToken:    {Subject: "alice", Roles: []string{"admin"}},
	"viewer-token": {Subject: "victor", Roles: []string{"viewer"}},
}

// startHTTP serves s with opts on a real loopback listener until the test
// ends.
func startHTTP(t *testing.T, s *mcp.Server, opts server.HTTPOptions) *server.HTTPServer {
	t.Helper()
	return startHTTPServer(t, s, server.HTTPServerOptions{Endpoint: opts})
}

// startHTTPServer is startHTTP, for options of the server around the
// endpoint.
func startHTTPServer(t *testing.T, s *mcp.Server, opts server.HTTPServerOptions) *server.HTTPServer {
	t.Helper()
	if opts.Endpoint.Verifier == nil {
		opts.Endpoint.Verifier = server.StaticTokens(testTokens)
	}
	hs, err := server.NewHTTPServer(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.Shutdown(context.Background()) })
	return hs
}

func newTestServer(t *testing.T, opts server.Options, d *deps) *mcp.Server {
	t.Helper()
	if opts.Authorizer == nil {
		opts.Authorizer = adminOnly{}
	}
	s, err := server.New(opts, server.Install(testRegistry(), d))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// post sends a raw JSON-RPC tools/list request with the given
// Authorization header ("" for none).
func post(t *testing.T, url, authorization string, body string) *http.Response {
	t.Helper()
	return mcptest.Post(t, url, mcptest.Header(authorization, ""), body)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"curl","version":"1"}}}`

func TestHTTPUnauthenticated(t *testing.T) {
	sink, logger := newLogSink()
	hs := startHTTP(t, newTestServer(t, server.Options{Logger: logger}, newDeps("a")), server.HTTPOptions{
		ResourceMetadataURL: "https://example.com/.well-known/oauth-protected-resource",
	})
	tests := []struct {
		name, authorization string
	}{
		{"no header", ""},
		{"not bearer", "Basic " + secretToken},
		{"unknown token", "Bearer not-" + secretToken},
		{"empty bearer", "Bearer "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, hs.URL(), tt.authorization, initializeBody)
			if resp.StatusCode != http.StatusUnauthorized {
				t.Errorf("status = %d, want 401", resp.StatusCode)
			}
			if got := resp.Header.Get("WWW-Authenticate"); !strings.Contains(got, "resource_metadata=") {
				t.Errorf("WWW-Authenticate = %q", got)
			}
			body, _ := io.ReadAll(resp.Body)
			if bytes.Contains(body, []byte(secretToken)) {
				t.Errorf("the 401 body echoes the token: %s", body)
			}
		})
	}
	// A real client without a token cannot connect either.
	cl := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	if _, err := cl.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: hs.URL(), MaxRetries: -1}, nil); err == nil {
		t.Error("a client without a token connected")
	}
	if strings.Contains(sink.String(), secretToken) {
		t.Errorf("the token appears in the log:\n%s", sink)
	}
}

func TestHTTPCallerReachesHandler(t *testing.T) {
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			sink, logger := newLogSink()
			s := newTestServer(t, server.Options{Logger: logger, Caller: &authz.Caller{Subject: "never-used-over-http"}}, newDeps("a"))
			hs := startHTTP(t, s, server.HTTPOptions{})
			opts := servertest.Options{ProtocolVersion: version}

			admin := servertest.ConnectHTTP(t, hs.URL(), secretToken, opts)
			got := structured[whoamiOut](t, call(t, admin, "whoami", nil))
			want := whoamiOut{Subject: "alice", Roles: []string{"admin"}, BearerSHA256: digest(secretToken), Server: "a"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("whoami over HTTP (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"boom", "echo", "fail", "get_thing", "wait", "whoami"}, servertest.ToolNames(t, admin)); diff != "" {
				t.Errorf("admin's tools (-want +got):\n%s", diff)
			}
			call(t, admin, "boom", nil)
			call(t, admin, "fail", nil)

			viewer := servertest.ConnectHTTP(t, hs.URL(), "viewer-token", opts)
			if got := structured[whoamiOut](t, call(t, viewer, "whoami", nil)).Subject; got != "victor" {
				t.Errorf("viewer's subject = %q", got)
			}
			if diff := cmp.Diff([]string{"boom", "echo", "fail", "wait", "whoami"}, servertest.ToolNames(t, viewer)); diff != "" {
				t.Errorf("viewer's tools (-want +got):\n%s", diff)
			}
			if _, err := viewer.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "1"}}); err == nil {
				t.Error("viewer called a hidden tool")
			}

			var outcomes []string
			for _, rec := range sink.calls(t) {
				outcomes = append(outcomes, fmt.Sprint(rec["subject"], ":", rec["tool"], ":", rec["outcome"]))
			}
			wantOutcomes := []string{"alice:whoami:ok", "alice:boom:panic", "alice:fail:tool_error", "victor:whoami:ok", "victor:get_thing:denied"}
			if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
				t.Errorf("logged calls (-want +got):\n%s", diff)
			}
			if strings.Contains(sink.String(), secretToken) {
				t.Errorf("the bearer appears in the log:\n%s", sink)
			}
		})
	}
}

func TestHTTPAnonymous(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	hs := startHTTP(t, s, server.HTTPOptions{Anonymous: &authz.Caller{Subject: "anonymous", Roles: []string{"viewer"}}})
	cs := servertest.ConnectHTTP(t, hs.URL(), "", servertest.Options{})
	got := structured[whoamiOut](t, call(t, cs, "whoami", nil))
	if diff := cmp.Diff(whoamiOut{Subject: "anonymous", Roles: []string{"viewer"}, Server: "a"}, got); diff != "" {
		t.Errorf("anonymous whoami (-want +got):\n%s", diff)
	}
	// A token still counts, and a bad one is still refused.
	admin := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{})
	if got := structured[whoamiOut](t, call(t, admin, "whoami", nil)).Subject; got != "alice" {
		t.Errorf("subject with a token = %q", got)
	}
	if resp := post(t, hs.URL(), "Bearer wrong", initializeBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("bad token with Anonymous set: status %d, want 401", resp.StatusCode)
	}
}

func TestHTTPVerifierFailure(t *testing.T) {
	sink, logger := newLogSink()
	var reported []error
	s := newTestServer(t, server.Options{Logger: logger, OnError: func(err error) { reported = append(reported, err) }}, newDeps("a"))
	hs := startHTTP(t, s, server.HTTPOptions{
		Verifier: func(_ context.Context, token string, _ *http.Request) (authz.Caller, error) {
			return authz.Caller{}, fmt.Errorf("identity provider down while checking %s", token)
		},
	})
	resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody)
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusInternalServerError || bytes.Contains(body, []byte(secretToken)) {
		t.Errorf("status %d body %q, want 500 without the token", resp.StatusCode, body)
	}
	if log := sink.String(); strings.Contains(log, secretToken) || !strings.Contains(log, "identity provider down while checking [redacted]") {
		t.Errorf("log:\n%s\nwant the cause with the token redacted", log)
	}
	if len(reported) != 1 {
		t.Errorf("OnError got %v", reported)
	}
}

func TestHTTPOptionsErrors(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	if _, err := server.HTTPHandler(s, server.HTTPOptions{}); err == nil || !strings.Contains(err.Error(), "Verifier is nil") {
		t.Errorf("HTTPHandler without a verifier: err = %v", err)
	}
}

// TestHTTPBodyLimitOff: a negative MaxRequestBodyBytes turns the limit
// off (toolroute's one rule for a bound, and the SDK's): a body past the
// default 4 MiB is read.
func TestHTTPBodyLimitOff(t *testing.T) {
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{MaxRequestBodyBytes: -1})
	big := initializeBody + strings.Repeat(" ", 5<<20)
	if resp := post(t, hs.URL(), "Bearer "+secretToken, big); resp.StatusCode != http.StatusOK {
		t.Errorf("a 5 MiB body without a limit: status = %d, want 200", resp.StatusCode)
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{MaxRequestBodyBytes: 512})
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 1024) + `"}}}`
	if resp := post(t, hs.URL(), "Bearer "+secretToken, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", resp.StatusCode)
	}
	if resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody); resp.StatusCode != http.StatusOK {
		t.Errorf("small request: status = %d, want 200", resp.StatusCode)
	}
}

func TestHTTPHealth(t *testing.T) {
	var ready atomic.Bool
	hs := startHTTPServer(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPServerOptions{Ready: ready.Load})
	get := func(path string) int {
		resp, err := http.Get("http://" + hs.Addr() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/healthz"); got != http.StatusOK {
		t.Errorf("/healthz = %d", got)
	}
	if got := get("/readyz"); got != http.StatusServiceUnavailable {
		t.Errorf("/readyz before ready = %d, want 503", got)
	}
	ready.Store(true)
	if got := get("/readyz"); got != http.StatusOK {
		t.Errorf("/readyz when ready = %d, want 200", got)
	}
}

func TestHTTPStateful(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	hs := startHTTP(t, s, server.HTTPOptions{Stateful: true})
	cs := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{ProtocolVersion: "2025-11-25"})
	if cs.ID() == "" {
		t.Error("stateful session has no id")
	}
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)).Subject; got != "alice" {
		t.Errorf("subject = %q", got)
	}
	// Another subject cannot ride alice's session.
	req, _ := http.NewRequest(http.MethodPost, hs.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer viewer-token")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("another subject on alice's session: status %d, want 403", resp.StatusCode)
	}
}

// TestHTTPReplicas serves one registry from two stateless replicas behind
// a round-robin reverse proxy: one client, every call succeeds, both
// replicas serve.
func TestHTTPReplicas(t *testing.T) {
	reg := testRegistry()
	var (
		depsOf  []*deps
		targets []*url.URL
	)
	for _, name := range []string{"r1", "r2"} {
		d := newDeps(name)
		s, err := server.New(server.Options{Authorizer: adminOnly{}}, server.Install(reg, d))
		if err != nil {
			t.Fatal(err)
		}
		hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}})
		if err != nil {
			t.Fatal(err)
		}
		replica := httptest.NewServer(hs.Handler())
		t.Cleanup(replica.Close)
		u, _ := url.Parse(replica.URL)
		depsOf, targets = append(depsOf, d), append(targets, u)
	}
	var next atomic.Int64
	proxy := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(targets[next.Add(1)%int64(len(targets))])
		},
	})
	t.Cleanup(proxy.Close)

	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			cs := servertest.ConnectHTTP(t, proxy.URL+"/mcp", secretToken, servertest.Options{ProtocolVersion: version})
			servedBy := map[string]int{}
			for i := range 10 {
				if names := servertest.ToolNames(t, cs); len(names) != 6 {
					t.Fatalf("tools/list %d: %v", i, names)
				}
				w := structured[whoamiOut](t, call(t, cs, "whoami", nil))
				if w.Subject != "alice" {
					t.Fatalf("call %d: subject %q", i, w.Subject)
				}
				servedBy[w.Server]++
				if got := structured[echoOut](t, call(t, cs, "get_thing", map[string]any{"id": fmt.Sprint(i)})).Text; got != fmt.Sprint(i) {
					t.Fatalf("get_thing %d = %q", i, got)
				}
			}
			if servedBy["r1"] == 0 || servedBy["r2"] == 0 {
				t.Errorf("served by %v, want both replicas", servedBy)
			}
		})
	}
	if depsOf[0].calls.Load() == 0 || depsOf[1].calls.Load() == 0 {
		t.Errorf("calls per replica: %d, %d", depsOf[0].calls.Load(), depsOf[1].calls.Load())
	}
}

// TestHTTPShutdownWaitsForCalls: Shutdown lets an in-flight call finish.
func TestHTTPShutdownWaitsForCalls(t *testing.T) {
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{})
	cs := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{})
	stopWithCallInFlight(t, hs, d, cs, func() error { return hs.Shutdown(context.Background()) })
	if _, err := http.Get("http://" + hs.Addr() + "/healthz"); err == nil {
		t.Error("the server still accepts connections after Shutdown")
	}
}

// TestHTTPShutdownStateful: a stateful client holds a standalone event
// stream open, which would hold a graceful shutdown until its deadline.
// Shutdown lets the in-flight call finish and be answered, then ends the
// stream and closes the session; a session of another transport on the
// same server survives.
func TestHTTPShutdownStateful(t *testing.T) {
	d := newDeps("a")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local"}}, d)
	hs := startHTTP(t, s, server.HTTPOptions{Stateful: true})
	st, ct := mcp.NewInMemoryTransports()
	other, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { other.Close() })
	local, err := mcp.NewClient(&mcp.Implementation{Name: "local"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { local.Close() })

	// The SDK's client, as a user runs it: it opens the standalone
	// stream and, when the stream ends, reconnects after a delay.
	hc := servertest.BearerClient(secretToken)
	t.Cleanup(hc.CloseIdleConnections)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateful"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: hs.URL(), HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: v2025})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })

	// A deadline only so that a shutdown held by the stream fails
	// instead of hanging; it is no performance assertion.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	stopWithCallInFlight(t, hs, d, cs, func() error { return hs.Shutdown(ctx) })
	for ss := range s.Sessions() {
		if ss != other {
			t.Errorf("session %q still open after Shutdown", ss.ID())
		}
	}
	if err := local.Ping(context.Background(), nil); err != nil {
		t.Errorf("the in-memory session after the HTTP server's Shutdown: %v", err)
	}
}

// TestHTTPShutdownCancelsCalls: calls still running when Shutdown's
// context ends are cancelled.
func TestHTTPShutdownCancelsCalls(t *testing.T) {
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{})
	cs := servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	}()
	await.Recv(t, d.started, "the call's start")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := hs.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if cause := await.Recv(t, d.causes, "the handler's cause"); !errors.Is(cause, server.ErrShuttingDown) && !errors.Is(cause, context.Canceled) {
		t.Errorf("handler's cause = %v, want ErrShuttingDown", cause)
	}
	await.Recv(t, done, "the call's end")
}

// waitStatus polls h until path answers status.
func waitStatus(t *testing.T, h http.Handler, path string, status int) {
	t.Helper()
	for {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		if rec.Code == status {
			return
		}
		if t.Context().Err() != nil {
			t.Fatalf("%s never answered %d", path, status)
		}
		runtimeGosched()
	}
}

// stopWithCallInFlight starts a "wait" call from cs, stops the server
// with stop while the call runs, and checks that /readyz answers 503
// meanwhile, that the call then finishes with its result, and that stop
// succeeds.
func stopWithCallInFlight(t *testing.T, hs *server.HTTPServer, d *deps, cs *mcp.ClientSession, stop func() error) {
	t.Helper()
	callThroughStop(t, d, cs, stop, func() { waitStatus(t, hs.Handler(), "/readyz", http.StatusServiceUnavailable) })
}

// callThroughStop runs the "wait" tool in cs, calls stop once the call
// runs, waits for stopping (which tells that the stop has begun), lets
// the call finish, and checks that the call was answered and stop
// returned nil.
func callThroughStop(t *testing.T, d *deps, cs *mcp.ClientSession, stop func() error, stopping func()) {
	t.Helper()
	result := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
		if err != nil {
			t.Errorf("in-flight call: %v", err)
		}
		result <- res
	}()
	await.Recv(t, d.started, "the call's start")
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	stopping()
	close(d.release)
	if res := await.Recv(t, result, "the call's result"); res == nil || structured[waitOut](t, res) != (waitOut{Done: true}) {
		t.Errorf("in-flight call result = %v", res)
	}
	if err := await.Recv(t, stopped, "the stop's return"); err != nil {
		t.Errorf("stop = %v", err)
	}
}

// hangGuard bounds a wait that would otherwise hang the test when the
// behaviour under test is broken: not a timing assertion, only a way to
// turn a hang into a failure.
const hangGuard = 10 * time.Second

// hangingLists is an authorizer whose listing hangs (an upstream outage).
// If honour is set it returns when its context ends, and reports the
// context's cause on causes; otherwise it waits for release alone.
type hangingLists struct {
	honour   bool
	once     sync.Once
	entered  chan struct{}
	release  chan struct{}
	released sync.Once
	causes   chan error
}

func newHangingLists(honour bool) *hangingLists {
	return &hangingLists{honour: honour, entered: make(chan struct{}), release: make(chan struct{}), causes: make(chan error, 1)}
}

// unblock lets the listing return.
func (h *hangingLists) unblock() { h.released.Do(func() { close(h.release) }) }

func (h *hangingLists) Allow(context.Context, authz.Caller, tool.Route) error { return nil }

func (h *hangingLists) AllowMany(ctx context.Context, _ authz.Caller, rs []tool.Route) ([]bool, error) {
	h.once.Do(func() { close(h.entered) })
	done := ctx.Done()
	if !h.honour {
		done = nil
	}
	select {
	case <-done:
		h.causes <- context.Cause(ctx)
		return nil, ctx.Err()
	case <-h.release:
		return make([]bool, len(rs)), nil
	}
}

// shutdownExpired starts a stateful server whose authorizer is a, opens a
// session with a tools/list in flight, and shuts the server down with a
// context that has ended already; it returns Shutdown's error, or fails
// the test if Shutdown does not return.
func shutdownExpired(t *testing.T, a *hangingLists) error {
	t.Helper()
	s := newTestServer(t, server.Options{Authorizer: a}, newDeps("a"))
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Stateful: true, Verifier: server.StaticTokens(testTokens)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	sess := openStateful(t, hs.URL())
	listed := make(chan struct{})
	go func() {
		defer close(listed)
		// Shutdown closes the connection: no answer is expected.
		req, _ := http.NewRequest(http.MethodPost, sess.url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+secretToken)
		req.Header.Set("Mcp-Session-Id", sess.id)
		req.Header.Set("Mcp-Protocol-Version", v2025)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	t.Cleanup(func() { <-listed })
	await.Recv(t, a.entered, "the authorizer's entry")
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the shutdown deadline has passed
	done := make(chan error, 1)
	go func() { done <- hs.Shutdown(ctx) }()
	select {
	case err := <-done:
		return err
	case <-time.After(hangGuard):
		a.unblock()
		await.Recv(t, done, "the call's end")
		t.Fatal("Shutdown did not return after its context ended")
		return nil
	}
}

// TestHTTPShutdownCancelsHungRequest: when Shutdown's context ends, every
// request still running is cancelled with cause ErrShuttingDown, not only
// tool calls: a stateful tools/list whose authorizer waits on its context
// ends, and Shutdown returns the context's error. The SDK runs a
// session's requests on a context nothing else cancels, and closing the
// session waits for them.
func TestHTTPShutdownCancelsHungRequest(t *testing.T) {
	a := newHangingLists(true)
	if err := shutdownExpired(t, a); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	select {
	case cause := <-a.causes:
		if !errors.Is(cause, server.ErrShuttingDown) {
			t.Errorf("the listing's context ended with %v, want ErrShuttingDown", cause)
		}
	case <-time.After(hangGuard):
		t.Error("the listing in flight was never cancelled")
		a.unblock()
	}
}

// TestHTTPShutdownDespiteStuckHandler: Shutdown returns once its context
// ends even if a handler ignores its context, and so holds its stateful
// session's Close forever.
func TestHTTPShutdownDespiteStuckHandler(t *testing.T) {
	a := newHangingLists(false)
	defer a.unblock() // the handler ends with the test
	if err := shutdownExpired(t, a); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
}

// TestHTTPStartAfterShutdown: a server shut down (even before it
// started) does not start again, with an error wrapping
// http.ErrServerClosed: it would serve forever, answer /readyz 503 and
// refuse every call, with nothing left to stop it.
func TestHTTPStartAfterShutdown(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown before Start = %v", err)
	}
	if err := hs.Start("127.0.0.1:0"); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Start after Shutdown = %v, want http.ErrServerClosed; serving on %q", err, hs.Addr())
		hs.Shutdown(context.Background())
	}
	if addr := hs.Addr(); addr != "" {
		t.Errorf("Start after Shutdown listened on %s", addr)
	}
}

// TestHTTPStartTwice: a second Start fails and leaves the first serving.
func TestHTTPStartTwice(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := hs.Start("127.0.0.1:0"); err != nil {
		t.Fatal(err)
	}
	defer hs.Shutdown(context.Background())
	if err := hs.Start("127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "started twice") {
		t.Errorf("second Start = %v, want an error saying it was started twice", err)
	}
	waitStatus(t, hs.Handler(), "/healthz", http.StatusOK)
	resp, err := http.Get("http://" + hs.Addr() + "/healthz")
	if err != nil {
		t.Fatalf("the first listener after a second Start: %v", err)
	}
	resp.Body.Close()
}

// TestHTTPNoSessionAfterShutdown: served through Handler() (no Start:
// nothing stops the listener), a stateful server refuses with 503 a
// request that would open a session once Shutdown has begun, as it
// refuses new event streams; the session would stay open, as nothing
// would close it.
func TestHTTPNoSessionAfterShutdown(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Stateful: true, Verifier: server.StaticTokens(testTokens)}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(hs.Handler())
	t.Cleanup(ts.Close)
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	if err := hs.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if resp := post(t, ts.URL+"/mcp", "Bearer "+secretToken, initializeBody); resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("initialize after Shutdown: status %d, want 503", resp.StatusCode)
	}
	for ss := range s.Sessions() {
		t.Errorf("session %q opened after Shutdown", ss.ID())
		ss.Close()
	}
}

// TestHTTPBadPath: NewHTTPServer (and so server.HTTP under fx) fails with
// an error naming HTTPServerOptions.Path for a path http.ServeMux would panic on
// (or never match), instead of panicking.
func TestHTTPBadPath(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	for _, p := range []string{"mcp", "/mcp/{x", "/mcp/{x}", "GET /mcp", "/a b", "/a/../mcp", "//mcp", "/healthz"} {
		t.Run(p, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("NewHTTPServer panicked: %v", r)
				}
			}()
			_, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}, Path: p})
			if err == nil || !strings.Contains(err.Error(), "HTTPServerOptions.Path") {
				t.Errorf("err = %v, want an error naming HTTPServerOptions.Path", err)
			}
		})
	}
	for _, p := range []string{"/", "/mcp/", "/api/v1/mcp"} {
		if _, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(testTokens)}, Path: p}); err != nil {
			t.Errorf("Path %q: %v", p, err)
		}
	}
}

// TestHTTPStatefulSessionBoundWithoutSubject: a stateful session opened by
// a caller without a Subject (a token mapped to roles only, which
// authz.Policy accepts) is bound to its token: another caller cannot post
// on it or end it (403). The SDK binds a session to its opener's
// TokenInfo.UserID, and to nobody when that is empty.
func TestHTTPStatefulSessionBoundWithoutSubject(t *testing.T) {
	tokens := map[string]authz.Caller{
		secretToken:    {Roles: []string{"admin"}}, // no Subject
		"viewer-token": {Subject: "victor", Roles: []string{"viewer"}},
		"other-token":  {Roles: []string{"admin"}}, // no Subject either
	}
	hs := startHTTP(t, newTestServer(t, server.Options{Authorizer: authz.AllowAll()}, newDeps("a")), server.HTTPOptions{Stateful: true, Verifier: server.StaticTokens(tokens)})
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	s := openStateful(t, hs.URL()) // opened with secretToken
	for _, token := range []string{"viewer-token", "other-token"} {
		other := &statefulSession{t: t, url: s.url, id: s.id, token: token}
		if resp := other.postRaw(`{"jsonrpc":"2.0","id":7,"method":"tools/list"}`); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s posting on the subjectless caller's session: status %d, want 403", token, resp.StatusCode)
		}
		req, _ := http.NewRequest(http.MethodDelete, s.url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", s.id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s ending the subjectless caller's session: status %d, want 403", token, resp.StatusCode)
		}
	}
	// Its own token still serves it.
	if ms := messages(t, s.postRaw(`{"jsonrpc":"2.0","id":8,"method":"tools/list"}`)); len(ms) != 1 || ms[0]["result"] == nil {
		t.Errorf("the opener's tools/list = %v", ms)
	}
}

// TestHTTPStatefulAnonymousRefused: HTTPHandler refuses Anonymous with
// Stateful: a session opened without a token could not be bound to its
// opener, and every caller could post on it, read its stream or end it.
func TestHTTPStatefulAnonymousRefused(t *testing.T) {
	s := newTestServer(t, server.Options{}, newDeps("a"))
	_, err := server.HTTPHandler(s, server.HTTPOptions{Stateful: true, Anonymous: &authz.Caller{Subject: "anonymous"}, Verifier: server.StaticTokens(testTokens)})
	if err == nil || !strings.Contains(err.Error(), "Anonymous") {
		t.Errorf("HTTPHandler(Stateful, Anonymous) = %v, want an error naming Anonymous", err)
	}
}
