package server_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
)

// The request lifecycle over the real protocol: progress, liveness,
// cancellation and one registry on several transports, for clients of
// both protocol generations, over in-memory transports, stdio and HTTP.

// lcVersions are the protocol versions the lifecycle tests speak.
var lcVersions = []string{"2026-07-28", "2025-11-25"}

// lcDeps is the lifecycle registry's container.
type lcDeps struct {
	started chan string   // "hold" and "spin" announce themselves
	proceed chan struct{} // "hold" returns when it receives
	stopped chan error    // "spin" reports why it stopped
	stops   atomic.Int64  // "spin" handlers that stopped on ctx.Err()
	late    chan struct{} // "late" reports again once it receives
	lateErr chan error    // what that report returned
}

func newLCDeps() *lcDeps {
	return &lcDeps{
		started: make(chan string, 16),
		proceed: make(chan struct{}),
		stopped: make(chan error, 16),
		late:    make(chan struct{}),
		lateErr: make(chan error, 1),
	}
}

type stepsArgs struct {
	N int `json:"n" jsonschema:"minimum=1,maximum=100"`
}

type doneOut struct {
	Done int `json:"done"`
}

// lifecycleRegistry serves the tools of these tests.
func lifecycleRegistry() *registry.Registry[*lcDeps] {
	r := registry.New[*lcDeps]()
	local := func(name, desc string, h tool.Handler[*lcDeps]) {
		r.Register(tool.Tool[*lcDeps]{Name: name, Description: desc, Local: true, Behaviour: behaviour.ReadOnly, Handler: h})
	}
	local("steps", "Report n steps of progress.", tool.Handle(func(ctx context.Context, d *lcDeps, req *mcp.CallToolRequest, in stepsArgs) (doneOut, error) {
		for i := 1; i <= in.N; i++ {
			if err := tool.Progress(ctx, req, float64(i), float64(in.N), fmt.Sprintf("step %d", i)); err != nil {
				return doneOut{}, err
			}
			// Not increasing: dropped.
			if err := tool.Progress(ctx, req, float64(i), float64(in.N), "again"); err != nil {
				return doneOut{}, err
			}
		}
		return doneOut{Done: in.N}, nil
	}))
	local("hold", "Report one step, then wait to be released.", tool.Handle(func(ctx context.Context, d *lcDeps, req *mcp.CallToolRequest, _ noArgs) (doneOut, error) {
		if err := tool.Progress(ctx, req, 1, 0, "started"); err != nil {
			return doneOut{}, err
		}
		d.started <- "hold"
		select {
		case <-d.proceed:
			return doneOut{Done: 1}, nil
		case <-ctx.Done():
			return doneOut{}, ctx.Err()
		}
	}))
	local("spin", "Work until cancelled.", tool.Handle(func(ctx context.Context, d *lcDeps, req *mcp.CallToolRequest, _ noArgs) (doneOut, error) {
		d.started <- "spin"
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for work := 0; ; work++ {
			if err := ctx.Err(); err != nil {
				d.stops.Add(1)
				d.stopped <- err
				return doneOut{Done: work}, err
			}
			<-tick.C
		}
	}))
	local("late", "Report progress after the call ended.", tool.Handle(func(ctx context.Context, d *lcDeps, req *mcp.CallToolRequest, _ noArgs) (doneOut, error) {
		if err := tool.Progress(ctx, req, 1, 0, "in time"); err != nil {
			return doneOut{}, err
		}
		go func() {
			<-d.late
			d.lateErr <- tool.Progress(context.WithoutCancel(ctx), req, 2, 0, "too late")
		}()
		return doneOut{Done: 1}, nil
	}))
	return r
}

// lcServer builds a server of the lifecycle registry (and the tests'
// usual one) with the given liveness interval.
func lcServer(t *testing.T, d *lcDeps, interval time.Duration) *mcp.Server {
	t.Helper()
	s, err := server.New(server.Options{
		Authorizer:       authz.AllowAll(),
		Caller:           &authz.Caller{Subject: "local"},
		ProgressInterval: interval,
	}, server.Install(lifecycleRegistry(), d), server.Install(testRegistry(), newDeps("t")))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// progressClient is a client that forwards the progress notifications it
// receives, in order.
func progressClient() (*mcp.Client, chan *mcp.ProgressNotificationParams) {
	got := make(chan *mcp.ProgressNotificationParams, 256)
	return mcp.NewClient(&mcp.Implementation{Name: "lifecycle", Version: "v0"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			got <- req.Params
		},
	}), got
}

// A transport connects a client to a server, speaking version.
type transport struct {
	name    string
	connect func(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession
}

var (
	inMemory = transport{"in-memory", func(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession {
		return servertest.Connect(t, s, nil, servertest.Options{ProtocolVersion: version, Client: c})
	}}
	stdio = transport{"stdio", func(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession {
		return connectStdio(t, s, c, version)
	}}
	statelessHTTP = transport{"http", func(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession {
		return connectHTTP(t, s, c, version, server.HTTPOptions{})
	}}
	statefulHTTP = transport{"stateful-http", func(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession {
		return connectHTTP(t, s, c, version, server.HTTPOptions{Stateful: true})
	}}
)

// connectHTTP serves s over HTTP on a loopback port until the test ends.
func connectHTTP(t *testing.T, s *mcp.Server, c *mcp.Client, version string, opts server.HTTPOptions) *mcp.ClientSession {
	t.Helper()
	hs := startHTTP(t, s, opts)
	// Before Shutdown: a connection the client dialed for concurrent
	// requests and never used would hold Shutdown for 5 s (net/http
	// treats a new connection as active that long).
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	return servertest.ConnectHTTP(t, hs.URL(), secretToken, servertest.Options{ProtocolVersion: version, Client: c})
}

// connectStdio serves s with StdioServer.Serve over pipes until the test ends.
func connectStdio(t *testing.T, s *mcp.Server, c *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	sr, sw, ct := pipes()
	served := make(chan error, 1)
	go func() { served <- server.NewStdioServer(s, sr, sw).Serve(context.Background()) }()
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cs.Close()
		if err := await.Recv(t, served, "Serve's return"); err != nil {
			t.Errorf("Serve = %v", err)
		}
	})
	return cs
}

// note is a progress notification as the tests compare it.
type note struct {
	Token    any
	Progress float64
	Total    float64
	Message  string
}

func noteOf(p *mcp.ProgressNotificationParams) note {
	return note{p.ProgressToken, p.Progress, p.Total, p.Message}
}

// callProgress calls name with a progress token (nil for none) and
// returns its result, failing on a protocol or tool error.
func callProgress(t *testing.T, cs *mcp.ClientSession, name string, token any, args any) *mcp.CallToolResult {
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
		t.Fatalf("CallTool(%s): isError: %s", name, text(res))
	}
	return res
}

// callInBackground calls name as callProgress does, from a goroutine of
// its own, and sends the result to done (a protocol error as an isError
// result saying so). It never touches t: a call the test releases later
// may outlive a failed test, whose cleanup ends it.
func callInBackground(cs *mcp.ClientSession, done chan<- *mcp.CallToolResult, name string, token any) {
	p := &mcp.CallToolParams{Name: name}
	if token != nil {
		p.SetProgressToken(token)
	}
	go func() {
		res, err := cs.CallTool(context.Background(), p)
		if err != nil {
			res = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("CallTool(%s): %v", name, err)}}}
		}
		done <- res
	}()
}

// ended returns the result of a call of [callInBackground], failing if
// it does not arrive within await.Timeout or is an error.
func ended(t *testing.T, done <-chan *mcp.CallToolResult, what string) *mcp.CallToolResult {
	t.Helper()
	res := await.Recv(t, done, "%s", what)
	if res.IsError {
		t.Fatalf("%s: isError: %s", what, text(res))
	}
	return res
}

// next returns the next n notifications, skipping barrier calls' liveness
// reports.
func next(t *testing.T, got chan *mcp.ProgressNotificationParams, n int) []note {
	t.Helper()
	var out []note
	for len(out) < n {
		select {
		case p := <-got:
			if isBarrierHeartbeat(p) {
				continue
			}
			out = append(out, noteOf(p))
		case <-time.After(await.Timeout):
			t.Fatalf("no notification arrived within %v: only %d of %d did: %v", await.Timeout, len(out), n, out)
		}
	}
	return out
}

// barrier calls "steps" with a fresh token and waits for its one
// notification. Notifications reach the client's handler in the order
// they were sent, and none of an ended call is sent later: whatever
// arrives before the barrier's was sent before the barrier call.
//
// On a slow machine the barrier call may itself run long enough for the
// server's liveness reports: those carry the barrier's token, and are
// skipped here and by [next].
func barrier(t *testing.T, cs *mcp.ClientSession, got chan *mcp.ProgressNotificationParams, name string) []note {
	t.Helper()
	token := barrierPrefix + name
	callProgress(t, cs, "steps", token, stepsArgs{N: 1})
	var before []note
	for {
		n := next(t, got, 1)[0]
		if n.Token == token {
			return before
		}
		before = append(before, n)
	}
}

const barrierPrefix = "barrier-"

// isBarrierHeartbeat reports whether p is a liveness report of a barrier
// call.
func isBarrierHeartbeat(p *mcp.ProgressNotificationParams) bool {
	token, _ := p.ProgressToken.(string)
	return strings.HasPrefix(token, barrierPrefix) && strings.HasPrefix(p.Message, "still working: ")
}

func TestProgressOverTransports(t *testing.T) {
	for _, tr := range []transport{inMemory, stdio, statelessHTTP} {
		for _, version := range lcVersions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				d := newLCDeps()
				c, got := progressClient()
				cs := tr.connect(t, lcServer(t, d, -1), c, version)

				// In order, increasing (the repeats are dropped).
				res := callProgress(t, cs, "steps", "p", stepsArgs{N: 3})
				if out := structured[doneOut](t, res); out.Done != 3 {
					t.Errorf("result = %+v", out)
				}
				want := []note{{"p", 1, 3, "step 1"}, {"p", 2, 3, "step 2"}, {"p", 3, 3, "step 3"}}
				if diff := cmp.Diff(want, next(t, got, 3)); diff != "" {
					t.Errorf("notifications (-want +got):\n%s", diff)
				}

				// None without a token.
				callProgress(t, cs, "steps", nil, stepsArgs{N: 2})
				if before := barrier(t, cs, got, "b1"); len(before) > 0 {
					t.Errorf("a call without a progress token sent %v", before)
				}

				// None after the call.
				callProgress(t, cs, "late", "l", nil)
				if diff := cmp.Diff([]note{{"l", 1, 0, "in time"}}, next(t, got, 1)); diff != "" {
					t.Errorf("late, in time (-want +got):\n%s", diff)
				}
				close(d.late)
				if err := await.Recv(t, d.lateErr, "the late Progress error"); err != nil {
					t.Errorf("Progress after the call = %v, want nil (ignored)", err)
				}
				if before := barrier(t, cs, got, "b2"); len(before) > 0 {
					t.Errorf("progress sent after the call ended: %v", before)
				}
			})
		}
	}
}

func TestLiveness(t *testing.T) {
	const interval = 5 * time.Millisecond
	for _, tr := range []transport{inMemory, stdio, statelessHTTP} {
		for _, version := range lcVersions {
			t.Run(tr.name+"/"+version, func(t *testing.T) {
				d := newLCDeps()
				c, got := progressClient()
				cs := tr.connect(t, lcServer(t, d, interval), c, version)
				// A failed test leaves its "hold" calls waiting: release
				// them before the session closes, which waits for them.
				t.Cleanup(func() { close(d.proceed) })

				// While "hold" runs, the server reports every interval:
				// after the tool's own report, increasing, with the
				// elapsed time.
				done := make(chan *mcp.CallToolResult, 1)
				callInBackground(cs, done, "hold", "h1")
				// The tool's report comes first unless the server's first
				// report beats the handler to it.
				var notes []note
				for started := -1; started < 0 || len(notes) < started+4; {
					n := next(t, got, 1)[0]
					if n == (note{"h1", 1, 0, "started"}) {
						started = len(notes)
					} else if n.Token != "h1" || !strings.HasPrefix(n.Message, "still working: ") || !strings.HasSuffix(n.Message, " elapsed") {
						t.Errorf("liveness report %+v", n)
					}
					notes = append(notes, n)
				}
				for i := 1; i < len(notes); i++ {
					if notes[i].Progress <= notes[i-1].Progress {
						t.Errorf("progress does not increase: %+v", notes)
					}
				}
				d.proceed <- struct{}{}
				ended(t, done, "the held call's result")

				// After the call, its reports stop: while another call
				// runs for three intervals and more, none of h1's arrives.
				callInBackground(cs, done, "hold", "h2")
				seen := 0
				for seen < 4 {
					n := next(t, got, 1)[0]
					switch n.Token {
					case "h2":
						seen++
					case "h1":
						if seen > 0 {
							t.Errorf("h1 reported after it ended: %+v", n)
						}
					default:
						t.Errorf("unexpected %+v", n)
					}
				}
				d.proceed <- struct{}{}
				ended(t, done, "the held call's result")
				for _, n := range barrier(t, cs, got, "b") {
					if n.Token != "h2" {
						t.Errorf("h1 reported after it ended: %+v", n)
					}
				}

				// No token, no reports: while a call without one runs
				// alongside one with a token for several intervals, only
				// the latter hears from the server.
				untracked := make(chan *mcp.CallToolResult, 1)
				callInBackground(cs, untracked, "hold", nil)
				for range 3 {
					await.Recv(t, d.started, "the call's start") // h1, h2 and the untracked call
				}
				callInBackground(cs, done, "hold", "h3")
				for _, n := range next(t, got, 4) {
					if n.Token != "h3" {
						t.Errorf("unexpected %+v", n)
					}
				}
				d.proceed <- struct{}{}
				d.proceed <- struct{}{}
				ended(t, done, "the held call's result")
				ended(t, untracked, "the untracked call's result")
				for _, n := range barrier(t, cs, got, "b2") {
					if n.Token != "h3" {
						t.Errorf("unexpected %+v", n)
					}
				}
			})
		}
	}
}

// cancelCases are the transports and versions over which a client can
// cancel a call: notifications/cancelled on in-memory, stdio and stateful
// HTTP sessions, the end of the request on stateless HTTP.
var cancelCases = []struct {
	tr      transport
	version string
}{
	{inMemory, "2026-07-28"},
	{inMemory, "2025-11-25"},
	{stdio, "2026-07-28"},
	{stdio, "2025-11-25"},
	{statelessHTTP, "2026-07-28"},
	{statelessHTTP, "2025-11-25"},
	{statefulHTTP, "2025-11-25"},
}

func TestCancellation(t *testing.T) {
	for _, tc := range cancelCases {
		t.Run(tc.tr.name+"/"+tc.version, func(t *testing.T) {
			d := newLCDeps()
			sink, logger := newLogSink()
			s, err := server.New(server.Options{
				Authorizer: authz.AllowAll(),
				Caller:     &authz.Caller{Subject: "local"},
				Logger:     logger,
			}, server.Install(lifecycleRegistry(), d))
			if err != nil {
				t.Fatal(err)
			}
			c, _ := progressClient()
			cs := tc.tr.connect(t, s, c, tc.version)

			for round := 1; round <= 2; round++ {
				ctx, cancel := context.WithCancel(context.Background())
				type outcome struct {
					res *mcp.CallToolResult
					err error
				}
				out := make(chan outcome, 1)
				go func() {
					res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spin"})
					out <- outcome{res, err}
				}()
				await.Recv(t, d.started, "the call's start")
				cancel()
				if o := await.Recv(t, out, "the call's outcome"); !errors.Is(o.err, context.Canceled) || o.res != nil {
					t.Errorf("cancelled CallTool = %v, %v; want no result and context.Canceled", o.res, o.err)
				}
				// The handler saw its context end and returned.
				if err := await.Recv(t, d.stopped, "the stop's return"); !errors.Is(err, context.Canceled) {
					t.Errorf("handler stopped with %v, want context.Canceled", err)
				}
				if got := d.stops.Load(); got != int64(round) {
					t.Errorf("handlers stopped = %d, want %d", got, round)
				}
				// The session keeps serving.
				if got := structured[doneOut](t, callProgress(t, cs, "steps", nil, stepsArgs{N: 2})); got.Done != 2 {
					t.Errorf("the call after the cancellation = %+v", got)
				}
			}
			// A cancelled call is logged when its handler has returned,
			// maybe after the next call.
			var outcomes []string
			for len(outcomes) < 4 && t.Context().Err() == nil {
				runtimeGosched()
				outcomes = outcomes[:0]
				for _, rec := range sink.calls(t) {
					outcomes = append(outcomes, rec["outcome"].(string))
				}
			}
			slices.Sort(outcomes)
			want := []string{"cancelled", "cancelled", "ok", "ok"}
			if diff := cmp.Diff(want, outcomes); diff != "" {
				t.Errorf("logged outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCancellationStdioWire reads what the server writes on stdio: a
// cancelled call gets no response at all (the SDK would answer it with
// the handler's error).
func TestCancellationStdioWire(t *testing.T) {
	for _, version := range lcVersions {
		t.Run(version, func(t *testing.T) {
			d := newLCDeps()
			s := lcServer(t, d, -1)
			sr, sw, ct := pipes()
			wire := &lineLog{}
			ct.Reader = wire.tee(ct.Reader)
			served := make(chan error, 1)
			go func() { served <- server.NewStdioServer(s, sr, sw).Serve(context.Background()) }()
			c, _ := progressClient()
			cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "spin"})
				errc <- err
			}()
			await.Recv(t, d.started, "the call's start")
			cancel()
			await.Recv(t, errc, "the call's error")
			await.Recv(t, d.stopped, "the stop's return")
			// The next call's response follows whatever the server wrote
			// for the cancelled one.
			callProgress(t, cs, "steps", nil, stepsArgs{N: 1})
			cs.Close()
			if err := await.Recv(t, served, "Serve's return"); err != nil {
				t.Errorf("Serve = %v", err)
			}
			var calls []string
			for _, l := range wire.lines() {
				var m struct {
					ID     any             `json:"id"`
					Result json.RawMessage `json:"result"`
					Error  json.RawMessage `json:"error"`
				}
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("wire line %q: %v", l, err)
				}
				if m.ID != nil && (strings.Contains(string(m.Result), `"content"`) || m.Error != nil) {
					calls = append(calls, string(m.Result)+string(m.Error))
				}
			}
			// Only the second call is answered (initialization and
			// discovery answers carry no content).
			if len(calls) != 1 || !strings.Contains(calls[0], `"done":1`) {
				t.Errorf("tools/call answers on the wire:\n%s", strings.Join(calls, "\n"))
			}
		})
	}
}

// lineLog records the lines a reader yields.
type lineLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *lineLog) tee(r io.ReadCloser) io.ReadCloser {
	return struct {
		io.Reader
		io.Closer
	}{io.TeeReader(r, lockedWriter{l}), r}
}

type lockedWriter struct{ l *lineLog }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.l.mu.Lock()
	defer w.l.mu.Unlock()
	return w.l.buf.Write(p)
}

func (l *lineLog) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Split(strings.TrimSpace(l.buf.String()), "\n")
}

// TestCancellationStdioBatch: a client of an older protocol may send
// calls in a JSON-RPC batch; a cancelled call of a batch is still
// answered, or the whole batch would never be.
func TestCancellationStdioBatch(t *testing.T) {
	d := newLCDeps()
	s := lcServer(t, d, -1)
	sr, cw := io.Pipe()
	cr, sw := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- server.NewStdioServer(s, sr, sw).Serve(context.Background()) }()
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(cr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(cw, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if l := await.Recv(t, lines, "the next line"); !strings.Contains(l, `"id":1`) {
		t.Fatalf("initialize answer = %s", l)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	send(`[{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"spin","arguments":{}}},{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"steps","arguments":{"n":1}}}]`)
	await.Recv(t, d.started, "the call's start")
	send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`)
	await.Recv(t, d.stopped, "the stop's return")
	var l string
	select {
	case l = <-lines:
	case <-time.After(10 * time.Second):
		// Not a timing assertion: a guard, so that a batch held back
		// forever fails the test instead of hanging it.
		t.Fatal("the batch was never answered")
	}
	if !strings.HasPrefix(l, "[") || !strings.Contains(l, `"id":2`) || !strings.Contains(l, `"id":3`) {
		t.Errorf("batch answer = %s, want both calls answered", l)
	}
	cw.Close()
	if err := await.Recv(t, served, "Serve's return"); err != nil {
		t.Errorf("Serve = %v", err)
	}
	for range lines {
	}
}

// TestOneRegistryOnStdioAndHTTP installs one registry on a server served
// over stdio and on another served over HTTP, and serves one server over
// both: calls run on both transports at once, with their own progress.
func TestOneRegistryOnStdioAndHTTP(t *testing.T) {
	reg := lifecycleRegistry()
	build := func(d *lcDeps) *mcp.Server {
		s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Caller: &authz.Caller{Subject: "local"}, ProgressInterval: -1}, server.Install(reg, d))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	for _, versions := range [][2]string{{"2026-07-28", "2025-11-25"}, {"2025-11-25", "2026-07-28"}} {
		stdioVersion, httpVersion := versions[0], versions[1]
		t.Run("stdio "+stdioVersion+", http "+httpVersion, func(t *testing.T) {
			dStdio, dHTTP := newLCDeps(), newLCDeps()
			sameDeps := newLCDeps()
			same := build(sameDeps)
			cases := []struct {
				name          string
				stdio, http   *mcp.Server
				dStdio, dHTTP *lcDeps
			}{
				{"two servers", build(dStdio), build(dHTTP), dStdio, dHTTP},
				{"one server", same, same, sameDeps, sameDeps},
			}
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					cStdio, gotStdio := progressClient()
					cHTTP, gotHTTP := progressClient()
					csStdio := stdio.connect(t, tc.stdio, cStdio, stdioVersion)
					csHTTP := statelessHTTP.connect(t, tc.http, cHTTP, httpVersion)

					// A call in flight on each transport at once.
					done := make(chan *mcp.CallToolResult, 2)
					callInBackground(csStdio, done, "hold", "s")
					callInBackground(csHTTP, done, "hold", "h")
					await.Recv(t, tc.dStdio.started, "the call's start")
					await.Recv(t, tc.dHTTP.started, "the call's start")
					if got := next(t, gotStdio, 1); got[0] != (note{"s", 1, 0, "started"}) {
						t.Errorf("stdio progress = %+v", got)
					}
					if got := next(t, gotHTTP, 1); got[0] != (note{"h", 1, 0, "started"}) {
						t.Errorf("HTTP progress = %+v", got)
					}
					tc.dStdio.proceed <- struct{}{}
					tc.dHTTP.proceed <- struct{}{}
					for range 2 {
						if got := structured[doneOut](t, ended(t, done, "the held call's result")); got.Done != 1 {
							t.Errorf("hold = %+v", got)
						}
					}
					for _, cs := range []*mcp.ClientSession{csStdio, csHTTP} {
						if got := structured[doneOut](t, callProgress(t, cs, "steps", nil, stepsArgs{N: 3})); got.Done != 3 {
							t.Errorf("steps = %+v", got)
						}
					}
				})
			}
		})
	}
}
