package server_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// TestRedactingHandler: the bearer of the authz caller in a record's
// context is gone from the record, even where no "Bearer" precedes it
// (in the message, and in an attribute bound with With), and a handler
// is wrapped once. The redaction itself is tested in internal/core/redact.
func TestRedactingHandler(t *testing.T) {
	const secret = "s3cr3t-T0ken_value"
	ctx := authz.WithCaller(context.Background(), authz.Caller{Subject: "alice", Bearer: secret})
	var buf bytes.Buffer
	log := slog.New(server.RedactingHandler(slog.NewTextHandler(&buf, nil))).With("bound", "echo "+secret)
	log.ErrorContext(ctx, "upstream said "+secret, slog.Any("caller", authz.Caller{Subject: "alice", Bearer: secret}))
	got := buf.String()
	if strings.Contains(got, secret) || !strings.Contains(got, "upstream said [redacted]") || !strings.Contains(got, "echo [redacted]") {
		t.Errorf("log:\n%s", got)
	}
	// Wrapping twice wraps once.
	h := server.RedactingHandler(slog.NewTextHandler(&buf, nil))
	if server.RedactingHandler(h) != h {
		t.Error("RedactingHandler wrapped its own handler again")
	}
}

// TestServerLogCarriesNoBearer: a tool error echoing the caller's
// bearer (an upstream that echoed the Authorization header) reaches the
// server's log redacted, through the handler server.New installs around
// Options.Logger.
func TestServerLogCarriesNoBearer(t *testing.T) {
	const secret = "tok-8c2e1f0b9d"
	r := registry.New[struct{}]()
	r.Register(tool.Tool[struct{}]{
		Name: "echo_header", Description: "Echo.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, _ struct{}, _ *mcp.CallToolRequest, _ struct{}) (struct{}, error) {
			c, _ := authz.CallerFromContext(ctx)
			return struct{}{}, errors.New("upstream: HTTP 500: you sent Authorization: Bearer " + c.Bearer)
		}),
	})
	var logs syncbuf.Buffer
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Logger: slog.New(slog.NewTextHandler(&logs, nil))}, server.Install(r, struct{}{}))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice", Bearer: secret}, servertest.Options{})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo_header", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	got := logs.String()
	if !strings.Contains(got, "outcome=tool_error") || strings.Contains(got, secret) {
		t.Errorf("log:\n%s", got)
	}
}
