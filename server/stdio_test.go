package server_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
)

// pipes returns the two ends of a stdio connection: the server reads sr
// and writes sw; the client's transport uses the other ends.
func pipes() (sr io.ReadCloser, sw io.WriteCloser, client *mcp.IOTransport) {
	cr, sw := io.Pipe()
	sr, cw := io.Pipe()
	return sr, sw, &mcp.IOTransport{Reader: cr, Writer: cw}
}

func TestServeIO(t *testing.T) {
	d := newDeps("stdio")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local", Roles: []string{"viewer"}}}, d)
	sr, sw, ct := pipes()
	served := make(chan error, 1)
	go func() { served <- server.ServeIO(context.Background(), s, sr, sw) }()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := structured[whoamiOut](t, call(t, cs, "whoami", nil)).Subject; got != "local" {
		t.Errorf("stdio subject = %q, want the configured caller", got)
	}
	if names := toolNames(t, cs); len(names) != 5 {
		t.Errorf("viewer over stdio sees %v", names)
	}
	cs.Close()
	if err := <-served; err != nil {
		t.Errorf("ServeIO after the client closed = %v, want nil", err)
	}
}

func TestServeIOCancel(t *testing.T) {
	d := newDeps("stdio")
	s := newTestServer(t, server.Options{Caller: &authz.Caller{Subject: "local"}}, d)
	sr, sw, ct := pipes()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- server.ServeIO(ctx, s, sr, sw) }()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	go cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "wait"})
	<-d.started
	cancel()
	if cause := <-d.causes; !errors.Is(cause, server.ErrShuttingDown) {
		t.Errorf("in-flight call's cause = %v, want ErrShuttingDown", cause)
	}
	if err := <-served; !errors.Is(err, context.Canceled) {
		t.Errorf("ServeIO = %v, want context.Canceled", err)
	}
}
