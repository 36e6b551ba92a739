package server_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// deps is the test registry's dependency container.
type deps struct {
	name    string        // which replica / server
	calls   atomic.Int64  // calls served
	started chan string   // the "wait" tool announces itself (buffered)
	release chan struct{} // closed to let "wait" return
	causes  chan error    // why "wait"'s context ended (buffered)
}

func newDeps(name string) *deps {
	return &deps{name: name, started: make(chan string, 16), release: make(chan struct{}), causes: make(chan error, 16)}
}

type noArgs struct{}

type whoamiOut struct {
	Subject string   `json:"subject"`
	Roles   []string `json:"roles"`
	// BearerSHA256 is the hex SHA-256 of the caller's bearer ("" if none),
	// so tests can check it without the tool echoing a secret.
	BearerSHA256 string `json:"bearerSha256"`
	Server       string `json:"server"`
}

type echoArgs struct {
	Text string `json:"text"`
}

type echoOut struct {
	Text string `json:"text"`
}

type waitOut struct {
	Done bool `json:"done"`
}

type thingArgs struct {
	ID string `json:"id" jsonschema:"minLength=1"`
}

func digest(s string) string {
	if s == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// testRegistry returns a fresh registry of small tools.
func testRegistry() *registry.Registry[*deps] {
	r := registry.New[*deps]()
	r.Register(tool.Tool[*deps]{
		Name: "whoami", Description: "Who am I.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (whoamiOut, error) {
			d.calls.Add(1)
			c, ok := authz.CallerFromContext(ctx)
			if !ok {
				return whoamiOut{}, errors.New("no caller")
			}
			roles := append([]string{}, c.Roles...)
			return whoamiOut{Subject: c.Subject, Roles: roles, BearerSHA256: digest(c.Bearer), Server: d.name}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "echo", Description: "Echo.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in echoArgs) (echoOut, error) {
			d.calls.Add(1)
			return echoOut(in), nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "wait", Description: "Wait until released or cancelled.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (waitOut, error) {
			d.started <- "wait"
			select {
			case <-d.release:
				return waitOut{Done: true}, nil
			case <-ctx.Done():
				d.causes <- context.Cause(ctx)
				return waitOut{}, ctx.Err()
			}
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "boom", Description: "Panic.", Local: true, Behaviour: behaviour.Destructive,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (waitOut, error) {
			panic("boom")
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "fail", Description: "Fail.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, _ noArgs) (waitOut, error) {
			return waitOut{}, errors.New("it failed")
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "get_thing", Description: "Get a thing.", ServiceKey: "things", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("things", "GET", "/api/v1/things/{id}")},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in thingArgs) (echoOut, error) {
			d.calls.Add(1)
			return echoOut{Text: in.ID}, nil
		}),
	})
	return r
}

// otherDeps is a second container type, for several registries on one
// server.
type otherDeps struct{ prefix string }

func otherRegistry(names ...string) *registry.Registry[otherDeps] {
	r := registry.New[otherDeps]()
	for _, name := range names {
		r.Register(tool.Tool[otherDeps]{
			Name: name, Description: "Echo with a prefix.", Local: true, Behaviour: behaviour.ReadOnly,
			Handler: tool.Handle(func(ctx context.Context, d otherDeps, _ *mcp.CallToolRequest, in echoArgs) (echoOut, error) {
				return echoOut{Text: d.prefix + in.Text}, nil
			}),
		})
	}
	return r
}

// adminOnly is a small authorizer: callers with the role "admin" may
// reach every route, others none; a caller without a subject is
// unauthenticated.
type adminOnly struct{}

func (adminOnly) Allow(_ context.Context, c authz.Caller, r tool.Route) error {
	switch {
	case c.Subject == "":
		return &authz.UnauthenticatedError{Reason: "no subject"}
	case !isAdmin(c):
		return &authz.DeniedError{Route: r, Subject: c.Subject, Reason: "not admin"}
	}
	return nil
}

func (a adminOnly) AllowMany(ctx context.Context, c authz.Caller, rs []tool.Route) ([]bool, error) {
	if c.Subject == "" {
		return nil, &authz.UnauthenticatedError{Reason: "no subject"}
	}
	out := make([]bool, len(rs))
	for i := range rs {
		out[i] = isAdmin(c)
	}
	return out, nil
}

func isAdmin(c authz.Caller) bool {
	for _, r := range c.Roles {
		if r == "admin" {
			return true
		}
	}
	return false
}

// logSink collects a logger's records as JSON.
type logSink struct{ syncbuf.Buffer }

func newLogSink() (*logSink, *slog.Logger) {
	s := &logSink{}
	return s, slog.New(slog.NewJSONHandler(s, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// calls returns the "toolroute: tools/call" records.
func (s *logSink) calls(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(s.String()), "\n") {
		if line == "" {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec["msg"] == "toolroute: tools/call" {
			out = append(out, rec)
		}
	}
	return out
}

// call calls a tool and fails the test on a protocol error.
func call(t *testing.T, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	return res
}

// structured decodes a result's structured content into T.
func structured[T any](t *testing.T, res *mcp.CallToolResult) T {
	t.Helper()
	var v T
	if res.IsError {
		t.Fatalf("isError result: %v", text(res))
	}
	data, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("structured content %s: %v", data, err)
	}
	return v
}

// text returns a result's text contents, joined.
func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

func runtimeGosched() { time.Sleep(time.Millisecond) }

var discardLogger = slog.New(slog.DiscardHandler)

func serverOptions(c *authz.Caller) server.Options {
	return server.Options{Authorizer: authz.AllowAll(), Caller: c}
}
