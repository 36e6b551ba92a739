package redact

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
)

type stringer string

func (s stringer) String() string { return string(s) }

type leaky struct{ Header string }

// caller is a value that shows a token in its %+v text, as authz.Caller
// does.
type caller struct{ Subject, Bearer string }

type bearerKey struct{}

// newHandler is a Handler whose caller's bearer is the context's
// bearerKey value.
func newHandler(h slog.Handler) *Handler {
	return New(h, func(ctx context.Context) string {
		b, _ := ctx.Value(bearerKey{}).(string)
		return b
	})
}

// TestHandler: the caller's bearer, and the token of any
// "Bearer TOKEN", is gone from every part of a record: the message,
// strings, errors, Stringers, LogValuers, other values, nested groups and
// the attributes bound with With, in both built-in handlers.
func TestHandler(t *testing.T) {
	const secret = "s3cr3t-T0ken_value"
	ctx := context.WithValue(context.Background(), bearerKey{}, secret)
	for _, name := range []string{"text", "json"} {
		t.Run(name, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if name == "json" {
				h = slog.NewJSONHandler(&buf, nil)
			}
			log := slog.New(newHandler(h)).With("bound", "echo "+secret).WithGroup("g").With(slog.Group("inner", "bound2", "x"+secret+"x"))
			log.ErrorContext(ctx, "upstream said "+secret,
				slog.String("s", "Authorization: Bearer "+secret),
				slog.Any("err", fmt.Errorf("catalog: HTTP 500: %w", errors.New("echo: "+secret))),
				slog.Any("str", stringer("token="+secret)),
				slog.Any("val", leaky{Header: secret}),
				slog.Group("nested", slog.Group("deeper", slog.String("s", secret))),
				slog.Any("caller", caller{Subject: "alice", Bearer: secret}),
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

// TestHandlerBounds: an overlong string is cut, whoever logs it.
func TestHandlerBounds(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(newHandler(slog.NewTextHandler(&buf, nil)))
	log.InfoContext(context.Background(), "m", slog.String("big", strings.Repeat("x", 4<<20)))
	if got := buf.Len(); got > 20<<10 || !strings.Contains(buf.String(), "…(truncated, 4194304 bytes)") {
		t.Errorf("a 4 MB attribute grew the log by %d bytes: %.200s", got, buf.String())
	}
}

// BenchmarkHandler: the cost of one tools/call record (the
// server's usual attributes, the caller in the context) through a text
// handler, wrapped by a Handler, relative to the bare handler:
// both run in one loop, alternating blocks, and "ratio" is the wrapped
// time over the bare.
func BenchmarkHandler(b *testing.B) {
	ctx := context.WithValue(context.Background(), bearerKey{}, "s3cr3t-T0ken_value")
	text := slog.NewTextHandler(io.Discard, nil)
	bare, wrapped := slog.New(text), slog.New(newHandler(text))
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

// TestText: every secret, and the token of any "Bearer TOKEN", is gone
// from a text; a text without them is as it was.
func TestText(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Authorization: Bearer tok-1; token tok-1", "Authorization: [redacted]; token [redacted]"},
		{"other bearer abc.def= end", "other bearer [redacted] end"},
		{"Basic dXNlcjpwdw==", "Basic [redacted]"},
		{"nothing secret", "nothing secret"},
	}
	for _, tt := range tests {
		if got := Text(tt.in, "Bearer tok-1", "tok-1", "", "dXNlcjpwdw=="); got != tt.want {
			t.Errorf("Text(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
