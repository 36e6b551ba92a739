package resultcache_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/resultcache"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

var quiet = slog.New(slog.DiscardHandler)

// clock is a test clock, moved by hand.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// api is a real upstream on 127.0.0.1 answering GET /things/api/{id}
// with {"id", "n"} (n counts its answers), or with the status it is
// set to.
type api struct {
	*httptest.Server
	served atomic.Int64
	status atomic.Int32 // 0: answer
}

func newAPI(t testing.TB) *api {
	a := &api{}
	a.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s := a.status.Load(); s != 0 {
			http.Error(w, `{"message": "down"}`, int(s))
			return
		}
		n := a.served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": %q, "n": %d}`, strings.TrimPrefix(r.URL.Path, "/api/"), n)
	}))
	t.Cleanup(a.Close)
	return a
}

type deps struct {
	upstream.Endpoints
	runs atomic.Int64 // runs of the local tools
}

type idArgs struct {
	ID string `json:"id" in:"path"`
}

type thing struct {
	ID string `json:"id"`
	N  int    `json:"n"`
}

type whoArgs struct {
	A int    `json:"a,omitempty"`
	B string `json:"b,omitempty"`
}

type who struct {
	Subject string `json:"subject"`
	Run     int64  `json:"run"`
	B       string `json:"b,omitempty"`
}

var thingRoute = tool.ServiceRoute("things", http.MethodGet, "/api/{id}")

// env is a server whose tools are cached by a cache on a test clock,
// with its metrics read by hand.
type env struct {
	srv    *mcp.Server
	api    *api
	deps   *deps
	clock  *clock
	reader *sdkmetric.ManualReader
}

func newEnv(t testing.TB, opts resultcache.Options) *env {
	t.Helper()
	e := &env{api: newAPI(t), clock: &clock{now: time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)}, reader: sdkmetric.NewManualReader()}
	e.deps = &deps{Endpoints: upstream.Endpoints{"things": {Origin: e.api.URL}}}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	opts.MeterProvider, opts.Now = mp, e.clock.Now
	c, err := resultcache.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = serveCached(t, c, e.deps)
	return e
}

// serveCached serves testRegistry's tools with d, cached by c.
func serveCached(t testing.TB, c *resultcache.Cache, d *deps) *mcp.Server {
	t.Helper()
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Logger: quiet, Middleware: []mcp.Middleware{c.Middleware()}}, server.Install(testRegistry(), d))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// testRegistry holds forwarding tools of three cache settings and a
// local tool, whoami, that counts its runs in its container.
func testRegistry() *registry.Registry[*deps] {
	reg := registry.New[*deps]()
	forward := func(name string, c *tool.ResultCache) {
		reg.Register(tool.Tool[*deps]{Name: name, Description: "Get a thing.", ServiceKey: "things", Behaviour: behaviour.ReadOnly,
			VisibilityRoutes: []tool.Route{thingRoute}, Cache: c, Handler: upstream.Forward[*deps, idArgs, thing](thingRoute)})
	}
	forward("get_thing", &tool.ResultCache{TTL: time.Minute, StaleOnError: 10 * time.Minute})
	forward("get_thing_fresh_only", &tool.ResultCache{TTL: time.Minute})
	forward("get_thing_uncached", nil)
	reg.Register(tool.Tool[*deps]{Name: "whoami", Description: "Who am I.", Local: true, Behaviour: behaviour.ReadOnly,
		Cache: &tool.ResultCache{TTL: time.Minute},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in whoArgs) (who, error) {
			c, _ := authz.CallerFromContext(ctx)
			n := d.runs.Add(1)
			if in.B == "fail" {
				return who{}, errors.New("failed")
			}
			return who{Subject: c.Subject, Run: n, B: in.B}, nil
		})})
	return reg
}

func (e *env) connect(t *testing.T, subject string, roles ...string) *mcp.ClientSession {
	return servertest.Connect(t, e.srv, &authz.Caller{Subject: subject, Roles: roles}, servertest.Options{})
}

// callText calls name and returns its result's text, "error: TEXT" for
// an isError result.
func callText(t *testing.T, cs *mcp.ClientSession, name string, args any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	if res.IsError {
		return "error: " + text
	}
	return text
}

// counts returns the metric's sums by its attributes.
func (e *env) counts(t *testing.T, name string) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := e.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			for _, p := range m.Data.(metricdata.Sum[int64]).DataPoints {
				v, _ := p.Attributes.Value(resultcache.AttrResult)
				out[v.Emit()] += p.Value
			}
		}
	}
	return out
}

// TestNeverAcrossCallers: two callers with identical arguments each get
// their own result, the second running the tool again; a caller's
// repeated call is answered from the cache, whatever the order of its
// arguments' keys; other arguments, other roles of the same subject and
// a caller without a subject run the tool.
func TestNeverAcrossCallers(t *testing.T) {
	e := newEnv(t, resultcache.Options{})
	alice, bob := e.connect(t, "alice", "viewer"), e.connect(t, "bob", "viewer")
	args := json.RawMessage(`{"a": 1, "b": "x"}`)
	steps := []struct {
		cs   *mcp.ClientSession
		args any
		want string
	}{
		{alice, args, `{"b":"x","run":1,"subject":"alice"}`},
		{bob, args, `{"b":"x","run":2,"subject":"bob"}`},
		{alice, json.RawMessage(`{"b":"x","a":1}`), `{"b":"x","run":1,"subject":"alice"}`},
		{bob, args, `{"b":"x","run":2,"subject":"bob"}`},
		{alice, json.RawMessage(`{"a": 2, "b": "x"}`), `{"b":"x","run":3,"subject":"alice"}`},
		{e.connect(t, "alice", "viewer", "admin"), args, `{"b":"x","run":4,"subject":"alice"}`},
		{e.connect(t, "", "viewer"), args, `{"b":"x","run":5,"subject":""}`},
		{e.connect(t, "", "viewer"), args, `{"b":"x","run":6,"subject":""}`},
	}
	for i, s := range steps {
		if got := callText(t, s.cs, "whoami", s.args); got != s.want {
			t.Errorf("step %d: %s, want %s", i, got, s.want)
		}
	}
	// The same caller speaking another protocol version: a result's form
	// differs between versions.
	old := servertest.Connect(t, e.srv, &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}, servertest.Options{ProtocolVersion: "2025-11-25"})
	if got := callText(t, old, "whoami", args); got != `{"b":"x","run":7,"subject":"alice"}` {
		t.Errorf("alice over 2025-11-25: %s, want a run of its own", got)
	}
	if diff := cmp.Diff(map[string]int64{"hit": 2, "miss": 5}, e.counts(t, resultcache.MetricLookups)); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}

// TestNotCached: a failed call, a tool without Cache, a call answering
// a question (requestState) and arguments with a repeated key are never
// answered from the cache.
func TestNotCached(t *testing.T) {
	e := newEnv(t, resultcache.Options{})
	cs := e.connect(t, "alice")
	for i := range 2 {
		if got := callText(t, cs, "whoami", map[string]any{"b": "fail"}); got != "error: failed" {
			t.Errorf("failing call %d: %s", i, got)
		}
	}
	if n := e.deps.runs.Load(); n != 2 {
		t.Errorf("a failed call was cached: %d runs, want 2", n)
	}
	for range 2 {
		callText(t, cs, "get_thing_uncached", map[string]any{"id": "1"})
	}
	if n := e.api.served.Load(); n != 2 {
		t.Errorf("an uncached tool was cached: the upstream answered %d, want 2", n)
	}
	for range 2 {
		callText(t, cs, "whoami", json.RawMessage(`{"a": 1, "a": 2}`))
	}
	if n := e.deps.runs.Load(); n != 4 {
		t.Errorf("arguments with a repeated key were cached: %d runs, want 4", n)
	}
	callText(t, cs, "whoami", map[string]any{"a": 7}) // cached now
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{"a": 7}})
	if err != nil || res.IsError {
		t.Fatal(err, res)
	}
	if n := e.deps.runs.Load(); n != 5 {
		t.Fatalf("the repeated call ran: %d runs", n)
	}
}

// TestQuestionsNotCached: a call that asks the user (an input_required
// result) is not stored, and a call that answers one (requestState) is
// neither answered from the cache nor stored.
func TestQuestionsNotCached(t *testing.T) {
	var asked atomic.Int64
	reg := registry.New[*deps]()
	reg.Register(tool.Tool[*deps]{Name: "ask", Description: "Ask.", Local: true, Behaviour: behaviour.ReadOnly,
		Cache: &tool.ResultCache{TTL: time.Minute},
		Handler: tool.HandleResult(func(_ context.Context, _ *deps, req *mcp.CallToolRequest, _ whoArgs) (*mcp.CallToolResult, error) {
			if req.Params.RequestState == "" {
				asked.Add(1)
				return &mcp.CallToolResult{
					InputRequests: mcp.InputRequestMap{"q": &mcp.ElicitParams{Message: "sure?", RequestedSchema: map[string]any{"type": "object"}}},
					RequestState:  "st",
				}, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "answered " + fmt.Sprint(asked.Load())}}}, nil
		})})
	c, err := resultcache.New(resultcache.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Logger: quiet, Middleware: []mcp.Middleware{c.Middleware()}}, server.Install(reg, &deps{}))
	if err != nil {
		t.Fatal(err)
	}
	// The client answers the question itself: each CallTool is a
	// question and its answer.
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{}}, nil
		}})
	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice"}, servertest.Options{Client: client})
	for i, want := range []string{"answered 1", "answered 2"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ask", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != want {
			t.Errorf("call %d: %q, want %q (a question or its answer came from the cache)", i, got, want)
		}
	}
}

// TestExpiryAndStaleOnError, on the test clock: a result answers for its
// TTL; after it, the call runs again. While the upstream is down (5xx,
// or refusing connections) an expired result answers only a tool with
// StaleOnError, only within it, and never in place of a 4xx answer.
func TestExpiryAndStaleOnError(t *testing.T) {
	e := newEnv(t, resultcache.Options{})
	cs := e.connect(t, "alice")
	one := map[string]any{"id": "1"}
	for _, name := range []string{"get_thing", "get_thing_fresh_only"} {
		callText(t, cs, name, one)
	}
	if got := callText(t, cs, "get_thing", one); got != `{"id":"1","n":1}` {
		t.Errorf("within the TTL: %s", got)
	}
	e.clock.advance(time.Minute)
	if got := callText(t, cs, "get_thing", one); got != `{"id":"1","n":3}` {
		t.Errorf("at the TTL: %s, want a fresh answer", got)
	}
	e.clock.advance(time.Minute)

	e.api.status.Store(http.StatusServiceUnavailable)
	if got := callText(t, cs, "get_thing", one); got != `{"id":"1","n":3}` {
		t.Errorf("upstream 503, within StaleOnError: %s, want the expired result", got)
	}
	if got := callText(t, cs, "get_thing_fresh_only", one); !strings.HasPrefix(got, "error: upstream answered 503") {
		t.Errorf("upstream 503, no StaleOnError: %s, want the error", got)
	}
	e.api.status.Store(http.StatusNotFound)
	if got := callText(t, cs, "get_thing", one); !strings.HasPrefix(got, "error: upstream answered 404") {
		t.Errorf("upstream 404: %s, want the error", got)
	}
	e.api.status.Store(0)
	e.api.Close() // refuses connections from now on
	if got := callText(t, cs, "get_thing", one); got != `{"id":"1","n":3}` {
		t.Errorf("upstream refusing connections: %s, want the expired result", got)
	}
	e.clock.advance(10 * time.Minute) // 11 minutes past the TTL
	if got := callText(t, cs, "get_thing", one); got != "error: upstream unavailable" {
		t.Errorf("past StaleOnError: %s, want the error", got)
	}
	if diff := cmp.Diff(map[string]int64{"hit": 1, "miss": 6, "stale": 2}, e.counts(t, resultcache.MetricLookups)); diff != "" {
		t.Errorf("lookups (-want +got):\n%s", diff)
	}
}

// TestBounds: the in-process store keeps at most MaxEntries entries,
// dropping the least recently used (counted as evictions), and does not
// keep a result larger than a sixteenth of MaxBytes.
func TestBounds(t *testing.T) {
	e := newEnv(t, resultcache.Options{MaxEntries: 2})
	cs := e.connect(t, "alice")
	for _, a := range []int{1, 2, 1, 3} { // 1 is used again: 2 goes first
		callText(t, cs, "whoami", map[string]any{"a": a})
	}
	if n := e.deps.runs.Load(); n != 3 {
		t.Fatalf("%d runs, want 3", n)
	}
	callText(t, cs, "whoami", map[string]any{"a": 1})
	callText(t, cs, "whoami", map[string]any{"a": 2})
	if n := e.deps.runs.Load(); n != 4 {
		t.Errorf("%d runs, want 4: 1 kept, 2 evicted", n)
	}
	if got := e.counts(t, resultcache.MetricEvictions); got[""] != 2 {
		t.Errorf("evictions = %v, want 2", got)
	}

	small := newEnv(t, resultcache.Options{MaxBytes: 16 * 400}) // results over 400 bytes are not kept
	cs = small.connect(t, "alice")
	for _, b := range []string{"short", "short", strings.Repeat("x", 400), strings.Repeat("x", 400)} {
		callText(t, cs, "whoami", map[string]any{"b": b})
	}
	if n := small.deps.runs.Load(); n != 3 {
		t.Errorf("%d runs, want 3: the short result kept, the long one not", n)
	}
}
