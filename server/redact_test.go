package server_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type stringer string

func (s stringer) String() string { return string(s) }

type leaky struct{ Header string }

// TestRedactingHandler: the caller's bearer, and the token of any
// "Bearer TOKEN", is gone from every part of a record: the message,
// strings, errors, Stringers, LogValuers, other values, nested groups and
// the attributes bound with With, in both built-in handlers.
func TestRedactingHandler(t *testing.T) {
	const secret = "s3cr3t-T0ken_value"
	ctx := authz.WithCaller(context.Background(), authz.Caller{Subject: "alice", Bearer: secret})
	for _, name := range []string{"text", "json"} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if name == "json" {
				h = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(server.RedactingHandler(h)).With("bound", "echo "+secret).WithGroup("g").With(slog.Group("inner", "bound2", "x"+secret+"x"))
			log.ErrorContext(ctx, "upstream said "+secret,
				slog.String("s", "Authorization: Bearer "+secret),
				slog.Any("err", fmt.Errorf("catalog: HTTP 500: %w", errors.New("echo: "+secret))),
				slog.Any("str", stringer("token="+secret)),
				slog.Any("val", leaky{Header: secret}),
				slog.Group("nested", slog.Group("deeper", slog.String("s", secret))),
				slog.Any("caller", authz.Caller{Subject: "alice", Bearer: secret}),
				// Not the caller's: only the pattern finds it.
				slog.String("other", "bearer abc.DEF-123=="),
				slog.String("prose", "a bearer"),
				slog.Int("n", 7),
			)
			got := buf.String()
			if strings.Contains(got, secret) || strings.Contains(got, "abc.DEF") {
				t.Errorf("a token reached the log:\n%s", got)
			}
			for _, want := range []string{"upstream said [redacted]", "Bearer [redacted]", "echo: [redacted]", "token=[redacted]", "bearer [redacted]", "a bearer", "alice"} {
				if !strings.Contains(got, want) {
					t.Errorf("the record lacks %q:\n%s", want, got)
				}
			}
		})
	}
}

// TestRedactingHandlerBounds: an overlong string is cut, whoever logs
// it, and a handler is wrapped once.
func TestRedactingHandlerBounds(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(server.RedactingHandler(slog.NewTextHandler(&buf, nil)))
	log.InfoContext(context.Background(), "m", slog.String("big", strings.Repeat("x", 4<<20)))
	if got := buf.Len(); got > 20<<10 || !strings.Contains(buf.String(), "…(truncated, 4194304 bytes)") {
		t.Errorf("a 4 MB attribute grew the log by %d bytes: %.200s", got, buf.String())
	}
	// Wrapping twice wraps once.
	h := server.RedactingHandler(slog.NewTextHandler(&buf, nil))
	if server.RedactingHandler(h) != h {
		t.Error("RedactingHandler wrapped its own handler again")
	}
}

// BenchmarkRedactingHandler: the cost of one tools/call record (the
// server's usual attributes, the caller in the context) through a text
// handler, wrapped by RedactingHandler, relative to the bare handler:
// both run in one loop, alternating blocks, and "ratio" is the wrapped
// time over the bare.
func BenchmarkRedactingHandler(b *testing.B) {
	ctx := authz.WithCaller(context.Background(), authz.Caller{Subject: "alice", Bearer: "s3cr3t-T0ken_value"})
	text := slog.NewTextHandler(io.Discard, nil)
	bare, wrapped := slog.New(text), slog.New(server.RedactingHandler(text))
	record := func(log *slog.Logger) {
		log.LogAttrs(ctx, slog.LevelInfo, "toolroute: tools/call", slog.String("tool", "get_item"), slog.String("subject", "alice"),
			slog.String("outcome", "tool_error"), slog.Duration("duration", time.Millisecond), slog.String("error", `item "itm-9" not found`))
	}
	var tb, tw time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		for range 100 {
			record(bare)
		}
		mid := time.Now()
		for range 100 {
			record(wrapped)
		}
		tb, tw = tb+mid.Sub(start), tw+time.Since(mid)
	}
	b.ReportMetric(float64(tw)/float64(tb), "ratio")
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
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice", Bearer: secret}, nil)
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo_header", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	got := logs.String()
	if !strings.Contains(got, "outcome=tool_error") || strings.Contains(got, secret) {
		t.Errorf("log:\n%s", got)
	}
}
