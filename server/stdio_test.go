package server_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

// pipes returns the two ends of a stdio connection: the server reads sr
// and writes sw; the client's transport uses the other ends.
func pipes() (sr io.ReadCloser, sw io.WriteCloser, client *mcp.IOTransport) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	return sr, sw, &mcp.IOTransport{Reader: cr, Writer: cw}
}

func TestStdioServeUntilClientLeaves(t *testing.T) {
	d := newDeps("stdio")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local", Roles: []string{"viewer"}}}, d)
	sr, sw, ct := pipes()
	served := make(chan error, 1)
	go func() { served <- server.NewStdioServer(s, sr, sw).Serve(context.Background()) }()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)).Subject; got != "local" {
		t.Errorf("stdio subject = %q, want the configured caller", got)
	}
	if names := servertest.ToolNames(t, cs); len(names) != 5 {
		t.Errorf("viewer over stdio sees %v", names)
	}
	cs.Close()
	if err := await.Recv(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve after the client closed = %v, want nil", err)
	}
}

func TestStdioServeContextCancelsCalls(t *testing.T) {
	d := newDeps("stdio")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local"}}, d)
	ctx, cancel := context.WithCancel(context.Background())
	cs, served := serveIOClient(t, ctx, s)
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	await.Recv(t, d.started, "the call's start")
	cancel()
	if cause := await.Recv(t, d.causes, "the handler's cause"); !errors.Is(cause, server.ErrShuttingDown) {
		t.Errorf("in-flight call's cause = %v, want ErrShuttingDown", cause)
	}
	if err := await.Recv(t, served, "Serve's return"); !errors.Is(err, context.Canceled) {
		t.Errorf("Serve = %v, want context.Canceled", err)
	}
}

// TestStdioServeContextCancelsEveryRequest: when Serve's context ends, every
// request in flight is cancelled with cause ErrShuttingDown, not only
// tool calls: a tools/list whose authorizer waits on its context ends,
// and Serve returns the context's error. Closing the session waits for
// its handlers, which the SDK runs on a context nothing else cancels.
func TestStdioServeContextCancelsEveryRequest(t *testing.T) {
	a := newHangingLists(true)
	defer a.unblock()
	s := newTestServer(t, server.Options{Authorizer: a, Caller: &authz.Caller{Subject: "local"}}, newDeps("a"))
	ctx, cancel := context.WithCancel(context.Background())
	cs, served := serveIOClient(t, ctx, s)
	go cs.ListTools(context.Background(), nil)
	await.Recv(t, a.entered, "the authorizer's entry")
	cancel()
	select {
	case err := <-served:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Serve = %v, want context.Canceled", err)
		}
	case <-time.After(hangGuard):
		a.unblock()
		await.Recv(t, served, "Serve's return")
		t.Fatal("Serve did not return after its context ended")
	}
	if cause := await.Recv(t, a.causes, "the handler's cause"); !errors.Is(cause, server.ErrShuttingDown) {
		t.Errorf("the listing's context ended with %v, want ErrShuttingDown", cause)
	}
}

// serveIOClient serves s with StdioServer.Serve(ctx) over pipes to a client, closed
// when the test ends; served yields Serve's error.
func serveIOClient(t *testing.T, ctx context.Context, s *mcp.Server) (*mcp.ClientSession, <-chan error) {
	t.Helper()
	sr, sw, ct := pipes()
	served := make(chan error, 1)
	go func() { served <- server.NewStdioServer(s, sr, sw).Serve(ctx) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, served
}

// stdioServerClient starts a StdioServer of s over pipes, and connects a
// client to it; served yields Serve's error.
func stdioServerClient(t *testing.T, s *mcp.Server) (*server.StdioServer, *mcp.ClientSession, <-chan error) {
	t.Helper()
	sr, sw, ct := pipes()
	ss := server.NewStdioServer(s, sr, sw)
	served := make(chan error, 1)
	go func() { served <- ss.Serve(context.Background()) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return ss, cs, served
}

// TestStdioServerShutdownWaitsForCalls: without fx, Shutdown refuses new
// calls, lets the call in flight finish and be answered, and then ends
// Serve.
func TestStdioServerShutdownWaitsForCalls(t *testing.T) {
	d := newDeps("stdio")
	ss, cs, served := stdioServerClient(t, newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local"}}, d))
	callThroughStop(t, d, cs, func() error { return ss.Shutdown(context.Background()) }, func() {
		// A call after Shutdown began is refused.
		for {
			_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
			if err != nil {
				if !strings.Contains(err.Error(), server.ErrShuttingDown.Error()) {
					t.Errorf("a call during shutdown: %v, want %v", err, server.ErrShuttingDown)
				}
				return
			}
			time.Sleep(time.Millisecond) // Shutdown has not begun yet
		}
	})
	if err := await.Recv(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve after Shutdown = %v, want nil", err)
	}
	if err := ss.Serve(context.Background()); err == nil {
		t.Error("Serve after Shutdown succeeded")
	}
}

// TestStdioServerShutdownDeadline: when Shutdown's context ends first,
// the call in flight is cancelled with cause ErrShuttingDown, Shutdown
// returns the context's error, and Serve ends.
func TestStdioServerShutdownDeadline(t *testing.T) {
	d := newDeps("stdio")
	ss, cs, served := stdioServerClient(t, newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local"}}, d))
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	await.Recv(t, d.started, "the call's start")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	if err := ss.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want context.DeadlineExceeded", err)
	}
	if cause := await.Recv(t, d.causes, "the handler's cause"); !errors.Is(cause, server.ErrShuttingDown) {
		t.Errorf("in-flight call's cause = %v, want ErrShuttingDown", cause)
	}
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(hangGuard):
		t.Fatal("Serve did not return after Shutdown")
	}
}
