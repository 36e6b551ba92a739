package ratelimit_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

type pingOut struct {
	Pong bool `json:"pong"`
}

// newServer serves one local tool, "ping", counting its runs, behind
// mw, logging to logger (nil: nowhere).
func newServer(t *testing.T, mw mcp.Middleware, logger *slog.Logger) (*mcp.Server, *int) {
	t.Helper()
	runs := new(int)
	reg := registry.New[*int]()
	reg.Register(tool.Tool[*int]{
		Name:        "ping",
		Description: "Answer pong.",
		Local:       true,
		Behaviour:   behaviour.ReadOnly,
		Handler: tool.Handle(func(_ context.Context, n *int, _ *mcp.CallToolRequest, _ struct{}) (pingOut, error) {
			*n++
			return pingOut{Pong: true}, nil
		}),
	})
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Middleware: []mcp.Middleware{mw}, Logger: logger}, server.Install(reg, runs))
	if err != nil {
		t.Fatal(err)
	}
	return s, runs
}

func ping(cs *mcp.ClientSession) error {
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ping", Arguments: map[string]any{}})
	if err == nil && res.IsError {
		err = errors.New("isError result")
	}
	return err
}

// TestMiddleware: each caller gets its own burst; a call over it gets
// the rate-limit JSON-RPC error (the tool does not run), tools/list is
// not limited, and the bucket refills.
func TestMiddleware(t *testing.T) {
	s, runs := newServer(t, ratelimit.Middleware(ratelimit.NewLimiter(ratelimit.Limit{Rate: 1, Period: 200 * time.Millisecond, Burst: 3}), ratelimit.Options{}), nil)
	alice := servertest.Connect(t, s, &authz.Caller{Subject: "alice"}, servertest.Options{})
	bob := servertest.Connect(t, s, &authz.Caller{Subject: "bob"}, servertest.Options{})
	for i := range 3 {
		if err := ping(alice); err != nil {
			t.Fatalf("alice's call %d: %v", i, err)
		}
	}
	err := ping(alice)
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != ratelimit.CodeRateLimited || !strings.Contains(je.Message, "rate limit exceeded") {
		t.Fatalf("alice's 4th call: %v, want a JSON-RPC error %d", err, ratelimit.CodeRateLimited)
	}
	var data struct {
		RetryAfterMs int64 `json:"retryAfterMs"`
	}
	if err := json.Unmarshal(je.Data, &data); err != nil || data.RetryAfterMs <= 0 || data.RetryAfterMs > 200 {
		t.Errorf("error data %s: retryAfterMs want in (0, 200]", je.Data)
	}
	if *runs != 3 {
		t.Errorf("the tool ran %d times, want 3", *runs)
	}
	if _, err := alice.ListTools(context.Background(), nil); err != nil {
		t.Errorf("tools/list over the call limit: %v", err)
	}
	if err := ping(bob); err != nil {
		t.Errorf("bob is limited by alice's calls: %v", err)
	}
	time.Sleep(time.Duration(data.RetryAfterMs) * time.Millisecond)
	if err := ping(alice); err != nil {
		t.Errorf("after retryAfterMs: %v", err)
	}
}

// TestRateLimitedLogRecord: the server logs a call over the limit once,
// at WARN, with the outcome "rate_limited" (not as a protocol error at
// ERROR, which would page someone for callers doing what callers do).
func TestRateLimitedLogRecord(t *testing.T) {
	var log syncbuf.Buffer
	s, _ := newServer(t, ratelimit.Middleware(ratelimit.NewLimiter(ratelimit.Limit{Rate: 1, Period: time.Hour, Burst: 1}), ratelimit.Options{}),
		slog.New(slog.NewJSONHandler(&log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice"}, servertest.Options{})
	if err := ping(cs); err != nil {
		t.Fatal(err)
	}
	var je *jsonrpc.Error
	if err := ping(cs); !errors.As(err, &je) || je.Code != ratelimit.CodeRateLimited {
		t.Fatalf("second call: %v, want the rate-limit error", err)
	}
	var got []string
	for line := range strings.Lines(log.String()) {
		var rec struct{ Msg, Level, Outcome, Subject string }
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if rec.Msg == "toolroute: tools/call" {
			got = append(got, rec.Level+" "+rec.Outcome+" "+rec.Subject)
		}
	}
	want := []string{"INFO ok alice", "WARN rate_limited alice"}
	if !slices.Equal(got, want) {
		t.Errorf("call records (level outcome subject) = %q, want %q\n%s", got, want, &log)
	}
}

type failing struct{}

func (failing) Allow(context.Context, string) (ratelimit.Result, error) {
	return ratelimit.Result{}, errors.New("store down")
}

// TestMiddlewareLimiterError: a limiter that cannot decide refuses the
// call with an internal error; the tool does not run.
func TestMiddlewareLimiterError(t *testing.T) {
	s, runs := newServer(t, ratelimit.Middleware(failing{}, ratelimit.Options{}), nil)
	err := ping(servertest.Connect(t, s, &authz.Caller{Subject: "alice"}, servertest.Options{}))
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInternalError {
		t.Errorf("call: %v, want an internal error", err)
	}
	if *runs != 0 {
		t.Errorf("the tool ran %d times", *runs)
	}
}

func TestCallerKey(t *testing.T) {
	ctx := context.Background()
	for _, tt := range []struct {
		caller *authz.Caller
		want   string
	}{
		{&authz.Caller{Subject: "alice", Bearer: "s3cret"}, "subject:alice"},
		{&authz.Caller{Bearer: "s3cret"}, "bearer:"},
		{nil, "anonymous"},
	} {
		c := ctx
		if tt.caller != nil {
			c = authz.WithCaller(ctx, *tt.caller)
		}
		got := ratelimit.CallerKey(c, nil)
		if !strings.HasPrefix(got, tt.want) || strings.Contains(got, "s3cret") {
			t.Errorf("CallerKey(%v) = %q, want prefix %q and no bearer", tt.caller, got, tt.want)
		}
	}
}

func TestLimitCheck(t *testing.T) {
	for _, l := range []ratelimit.Limit{{}, {Rate: 1, Period: time.Second}, {Rate: -1, Period: time.Second, Burst: 1}} {
		if l.Check() == nil {
			t.Errorf("%v: no error", l)
		}
	}
	if err := ratelimit.PerSecond(5).Check(); err != nil {
		t.Error(err)
	}
	defer func() {
		if r := recover(); r == nil || !strings.HasPrefix(r.(string), "ratelimit: ") {
			t.Errorf("NewLimiter(Limit{}) panic = %v", r)
		}
	}()
	ratelimit.NewLimiter(ratelimit.Limit{})
}

// TestCodeOutsideMCPRange: the code lies where the MCP specification
// lets implementations choose (-32000 to -32019), not in the range it
// reserves (-32020 to -32099).
func TestCodeOutsideMCPRange(t *testing.T) {
	if c := ratelimit.CodeRateLimited; c < -32019 || c > -32000 {
		t.Errorf("CodeRateLimited = %d, want one of -32019 to -32000", c)
	}
}
