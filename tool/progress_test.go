package tool_test

import (
	"context"
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/tool"
)

// progressDeps is the container of the progress tests' tools.
type progressDeps struct {
	errs  chan error    // what the tools' Progress calls returned, in order
	late  chan struct{} // "late" waits on it before reporting after its call
	lateR chan error    // what the late report returned
}

type progressArgs struct {
	// Reports are the done values to report, in order, each of total 10.
	Reports []float64 `json:"reports"`
}

type progressOut struct {
	OK bool `json:"ok"`
}

// progressServer serves "report" (reports in.Reports) and "late" (reports
// after its call ended) through AddTo with a wrap that begins each call,
// as the registry's does; and "unwrapped", added without a wrap.
func progressServer(d *progressDeps) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "progress", Version: "v0"}, nil)
	wrap := func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error {
		ctx, end := tool.BeginCall(ctx, &tool.Call{Tool: req.Params.Name, Local: true})
		defer end()
		return run(ctx)
	}
	report := tool.Handle(func(ctx context.Context, d *progressDeps, req *mcp.CallToolRequest, in progressArgs) (progressOut, error) {
		for _, v := range in.Reports {
			d.errs <- tool.Progress(ctx, req, v, 10, "report")
		}
		return progressOut{OK: true}, nil
	})
	report.AddWrapped(s, &mcp.Tool{Name: "report", Description: "Report progress."}, d, wrap)
	report.AddWrapped(s, &mcp.Tool{Name: "unwrapped", Description: "Report progress, unwrapped."}, d, nil)
	tool.Handle(func(ctx context.Context, d *progressDeps, req *mcp.CallToolRequest, _ struct{}) (progressOut, error) {
		if err := tool.Progress(ctx, req, 1, 0, "in time"); err != nil {
			return progressOut{}, err
		}
		go func() {
			<-d.late
			d.lateR <- tool.Progress(context.WithoutCancel(ctx), req, 2, 0, "too late")
		}()
		return progressOut{OK: true}, nil
	}).AddWrapped(s, &mcp.Tool{Name: "late", Description: "Report after the call."}, d, wrap)
	return s
}

// progressClient connects a client speaking version ("" for the latest)
// to s and returns it with the channel of the progress notifications it
// receives.
func progressClient(t *testing.T, s *mcp.Server, version string) (*mcp.ClientSession, chan *mcp.ProgressNotificationParams) {
	t.Helper()
	got := make(chan *mcp.ProgressNotificationParams, 64)
	c := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params
		},
	})
	return mcptest.Connect(t, s, &mcptest.Options{Client: c, Session: &mcp.ClientSessionOptions{ProtocolVersion: version}}), got
}

// progressVersions are the protocol versions the tests speak.
var progressVersions = []string{"2026-07-28", "2025-11-25"}

type sent struct {
	Token    any
	Progress float64
	Total    float64
	Message  string
}

func callWithToken(t *testing.T, cs *mcp.ClientSession, name string, token any, args any) *mcp.CallToolResult {
	t.Helper()
	p := &mcp.CallToolParams{Name: name, Arguments: args}
	if token != nil {
		p.SetProgressToken(token)
	}
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		t.Fatalf("CallTool(%s): %v", name, err)
	}
	if res.IsError {
		t.Fatalf("CallTool(%s): isError result %s", name, progressText(res))
	}
	return res
}

// receive returns the next n notifications.
func receive(t *testing.T, got chan *mcp.ProgressNotificationParams, n int) []sent {
	t.Helper()
	var out []sent
	for range n {
		p := await.Recv(t, got, "progress notification %d of %d", len(out)+1, n)
		out = append(out, sent{p.ProgressToken, p.Progress, p.Total, p.Message})
	}
	return out
}

func TestProgress(t *testing.T) {
	for _, version := range progressVersions {
		t.Run(version, func(t *testing.T) {
			d := &progressDeps{errs: make(chan error, 64)}
			cs, got := progressClient(t, progressServer(d), version)

			// Non-increasing values are dropped; the rest arrive in order.
			callWithToken(t, cs, "report", "a", progressArgs{Reports: []float64{1, 2, 2, 1.5, 3, 0, 10}})
			want := []sent{
				{"a", 1, 10, "report"},
				{"a", 2, 10, "report"},
				{"a", 3, 10, "report"},
				{"a", 10, 10, "report"},
			}
			if diff := cmp.Diff(want, receive(t, got, len(want))); diff != "" {
				t.Errorf("notifications (-want +got):\n%s", diff)
			}
			for range 7 {
				if err := await.Recv(t, d.errs, "the tool's Progress error"); err != nil {
					t.Errorf("Progress = %v, want nil (sent or dropped)", err)
				}
			}

			// Each call has its own sequence: 1 is new again for token "b".
			// Without a token, nothing is sent: the next notification the
			// client sees is the one of the call after.
			callWithToken(t, cs, "report", nil, progressArgs{Reports: []float64{1, 2}})
			callWithToken(t, cs, "report", "b", progressArgs{Reports: []float64{1}})
			if diff := cmp.Diff([]sent{{"b", 1, 10, "report"}}, receive(t, got, 1)); diff != "" {
				t.Errorf("after a call without a token (-want +got):\n%s", diff)
			}
			for range 3 {
				if err := await.Recv(t, d.errs, "the tool's Progress error"); err != nil {
					t.Errorf("Progress = %v, want nil", err)
				}
			}
		})
	}
}

func TestProgressNotFinite(t *testing.T) {
	d := &progressDeps{errs: make(chan error, 64)}
	s := progressServer(d)
	tool.Handle(func(ctx context.Context, d *progressDeps, req *mcp.CallToolRequest, _ struct{}) (progressOut, error) {
		// NaN and the infinities do not increase, and JSON cannot carry
		// them: they are dropped, not sent (a send would fail).
		for _, v := range []float64{math.NaN(), math.Inf(1), math.Inf(-1), 1} {
			d.errs <- tool.Progress(ctx, req, v, math.Inf(1), "v")
		}
		return progressOut{OK: true}, nil
	}).AddWrapped(s, &mcp.Tool{Name: "weird", Description: "Report odd values."}, d, func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error {
		ctx, end := tool.BeginCall(ctx, nil)
		defer end()
		return run(ctx)
	})
	cs, got := progressClient(t, s, "2026-07-28")
	callWithToken(t, cs, "weird", "w", nil)
	// An infinite total is unknown: omitted.
	if diff := cmp.Diff([]sent{{"w", 1, 0, "v"}}, receive(t, got, 1)); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	for range 4 {
		if err := await.Recv(t, d.errs, "the tool's Progress error"); err != nil {
			t.Errorf("Progress = %v, want nil", err)
		}
	}
}

func TestProgressAfterTheCall(t *testing.T) {
	for _, version := range progressVersions {
		t.Run(version, func(t *testing.T) {
			d := &progressDeps{errs: make(chan error, 64), late: make(chan struct{}), lateR: make(chan error, 1)}
			cs, got := progressClient(t, progressServer(d), version)
			callWithToken(t, cs, "late", "a", map[string]any{})
			if diff := cmp.Diff([]sent{{"a", 1, 0, "in time"}}, receive(t, got, 1)); diff != "" {
				t.Errorf("in time (-want +got):\n%s", diff)
			}
			// The call has returned: its handler's goroutine reports now.
			close(d.late)
			if err := await.Recv(t, d.lateR, "the late Progress error"); err != nil {
				t.Errorf("Progress after the call = %v, want nil (ignored)", err)
			}
			// A barrier: the next notification is the next call's, so the
			// late one was never sent.
			callWithToken(t, cs, "report", "barrier", progressArgs{Reports: []float64{5}})
			if diff := cmp.Diff([]sent{{"barrier", 5, 10, "report"}}, receive(t, got, 1)); diff != "" {
				t.Errorf("after the late report (-want +got):\n%s", diff)
			}
		})
	}
}

// TestProgressWithoutBeginCall: a handler not run through BeginCall
// cannot keep its values increasing, and says so instead of sending.
func TestProgressWithoutBeginCall(t *testing.T) {
	d := &progressDeps{errs: make(chan error, 64)}
	cs, got := progressClient(t, progressServer(d), "2026-07-28")
	callWithToken(t, cs, "unwrapped", "a", progressArgs{Reports: []float64{1}})
	if err := await.Recv(t, d.errs, "the tool's Progress error"); err == nil {
		t.Error("Progress outside BeginCall = nil, want an error")
	}
	callWithToken(t, cs, "report", "barrier", progressArgs{Reports: []float64{1}})
	if diff := cmp.Diff([]sent{{"barrier", 1, 10, "report"}}, receive(t, got, 1)); diff != "" {
		t.Errorf("after the unwrapped call (-want +got):\n%s", diff)
	}
	await.Recv(t, d.errs, "the tool's Progress error")
}

func TestBeginCall(t *testing.T) {
	c := &tool.Call{Tool: "t", Local: true}
	ctx, end := tool.BeginCall(context.Background(), c)
	if got := tool.CallFromContext(ctx); got != c {
		t.Errorf("CallFromContext = %v, want %v", got, c)
	}
	// A nil Call keeps none.
	outer, outerEnd := tool.BeginCall(context.Background(), nil)
	defer outerEnd()
	if got := tool.CallFromContext(outer); got != nil {
		t.Errorf("CallFromContext after BeginCall(nil) = %v, want nil", got)
	}
	end()
	end() // twice is fine
}

// TestHeartbeat checks the sequence Heartbeat and Progress make together
// over the protocol: heartbeats raise the last value minimally, and the
// tool's next report is still sent.
func TestHeartbeat(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "hb", Version: "v0"}, nil)
	errs := make(chan error, 16)
	tool.Handle(func(ctx context.Context, _ struct{}, req *mcp.CallToolRequest, _ struct{}) (progressOut, error) {
		errs <- tool.Heartbeat(ctx, req, "alive 1")   // 0: nothing was sent yet
		errs <- tool.Progress(ctx, req, 0, 4, "zero") // dropped: not above 0
		errs <- tool.Progress(ctx, req, 4, 4, "four")
		errs <- tool.Heartbeat(ctx, req, "alive 2") // above 4: total omitted
		errs <- tool.Progress(ctx, req, 5, 8, "five")
		errs <- tool.Heartbeat(ctx, req, "alive 3")
		return progressOut{OK: true}, nil
	}).AddWrapped(s, &mcp.Tool{Name: "hb", Description: "Heartbeats."}, struct{}{}, func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error {
		ctx, end := tool.BeginCall(ctx, nil)
		defer end()
		return run(ctx)
	})
	cs, got := progressClient(t, s, "2026-07-28")
	callWithToken(t, cs, "hb", "h", nil)
	want := []sent{
		{"h", 0, 0, "alive 1"},
		{"h", 4, 4, "four"},
		{"h", math.Nextafter(4, 5), 0, "alive 2"},
		{"h", 5, 8, "five"},
		{"h", math.Nextafter(5, 6), 8, "alive 3"},
	}
	if diff := cmp.Diff(want, receive(t, got, len(want))); diff != "" {
		t.Errorf("notifications (-want +got):\n%s", diff)
	}
	for range 6 {
		if err := await.Recv(t, errs, "the tool's Progress error"); err != nil {
			t.Error(err)
		}
	}
	// Outside a call, Heartbeat reports the misuse like Progress.
	req := &mcp.CallToolRequest{Session: &mcp.ServerSession{}, Params: &mcp.CallToolParamsRaw{}}
	req.Params.SetProgressToken("x")
	if err := tool.Heartbeat(context.Background(), req, ""); err == nil {
		t.Errorf("Heartbeat outside a call = %v, want an error", err)
	}
}

func progressText(res *mcp.CallToolResult) string {
	var s string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			s += tc.Text
		}
	}
	return s
}
