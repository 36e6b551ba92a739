package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/server/servertest"
)

// buildService builds example-service once for the calling test.
func buildService(tb testing.TB) string {
	tb.Helper()
	bin := filepath.Join(tb.TempDir(), "example-service")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go build: %v\n%s", err, out)
	}
	return bin
}

// replica is one example-service process.
type replica struct {
	cmd    *exec.Cmd
	url    string // the MCP endpoint
	log    *logBuffer
	exited chan struct{}
}

// startReplica runs bin on a free 127.0.0.1 port with env added to the
// environment (TOOLROUTE_ variables of the test's own environment are
// left out), and waits until it serves. It is stopped when tb ends.
func startReplica(tb testing.TB, bin string, env []string, args ...string) *replica {
	tb.Helper()
	r := &replica{log: &logBuffer{url: make(chan string, 1)}, exited: make(chan struct{})}
	r.cmd = exec.Command(bin, append([]string{"-addr", "127.0.0.1:0"}, args...)...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "TOOLROUTE_") {
			r.cmd.Env = append(r.cmd.Env, kv)
		}
	}
	r.cmd.Env = append(r.cmd.Env, env...)
	r.cmd.Stderr = r.log
	if err := r.cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := r.exited
	go func() { r.cmd.Wait(); close(exited) }()
	tb.Cleanup(func() {
		r.cmd.Process.Signal(os.Interrupt)
		await.Recv(tb, exited, "the process's exit")
	})
	select {
	case r.url = <-r.log.url:
		return r
	case <-exited:
		tb.Fatalf("example-service exited before serving:\n%s", r.log)
	case <-time.After(20 * time.Second):
		tb.Fatalf("example-service did not serve within 20s:\n%s", r.log)
	}
	return nil
}

// kill ends the replica at once (SIGKILL: no drain, no goodbye) and
// waits until it is gone, so that its port refuses connections.
func (r *replica) kill() {
	r.cmd.Process.Kill()
	<-r.exited
}

// roundRobin is a load balancer's transport: each request goes to the
// next backend in turn; a backend that refuses connections (a dead
// replica) is skipped for the next one, as load balancers do for
// connection errors. No keep-alive, so that a dead backend shows as a
// refused connection rather than a broken pooled one.
type roundRobin struct {
	backends []*url.URL
	next     atomic.Uint64
	skipped  atomic.Int64
	base     http.RoundTripper
}

func newRoundRobin(tb testing.TB, replicas ...*replica) (*roundRobin, string) {
	tb.Helper()
	rr := &roundRobin{base: &http.Transport{DisableKeepAlives: true}}
	for _, r := range replicas {
		u, err := url.Parse(r.url)
		if err != nil {
			tb.Fatal(err)
		}
		rr.backends = append(rr.backends, u)
	}
	lb := httptest.NewServer(&httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.Out.URL.Scheme, pr.Out.URL.Host = "http", rr.backends[0].Host },
		Transport: rr,
	})
	tb.Cleanup(lb.Close)
	return rr, lb.URL + rr.backends[0].Path
}

func (rr *roundRobin) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	var lastErr error
	for range rr.backends {
		b := rr.backends[(rr.next.Add(1)-1)%uint64(len(rr.backends))]
		out := req.Clone(req.Context())
		out.URL.Scheme, out.URL.Host, out.Host = b.Scheme, b.Host, b.Host
		out.Body = io.NopCloser(bytes.NewReader(body))
		resp, err := rr.base.RoundTrip(out)
		var op *net.OpError
		if err != nil && errors.As(err, &op) && op.Op == "dial" {
			rr.skipped.Add(1)
			lastErr = err
			continue
		}
		return resp, err
	}
	return nil, lastErr
}

// asker is a 2026-07-28 client that can be asked (form elicitation) but
// answers nothing by itself: a question comes back as an input_required
// result, so the test chooses where the answer goes.
func asker() servertest.Options {
	return servertest.Options{Client: mcp.NewClient(&mcp.Implementation{Name: "asker", Version: "v0"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return nil, errors.New("not asked in process")
		},
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
	})}
}

// answer is the retry of a delete_item question with decision.
func answer(id string, q *mcp.CallToolResult, decision string) *mcp.CallToolParams {
	return &mcp.CallToolParams{
		Name:      "delete_item",
		Arguments: map[string]any{"id": id},
		InputResponses: mcp.InputResponseMap{
			permission.InputKey: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}},
		},
		RequestState: q.RequestState,
	}
}

func deletes(seen []string) int {
	n := 0
	for _, s := range seen {
		if strings.HasPrefix(s, "DELETE ") {
			n++
		}
	}
	return n
}

// fleet is three replicas sharing Redis, behind a round-robin proxy.
type fleet struct {
	redis    *redistest.Server
	replicas []*replica
	rr       *roundRobin
	lbURL    string
	seen     func() []string // upstream requests
	// The upstream holds a GET of item hangID until the request ends,
	// telling hung when it begins and ended when it ends.
	hung, ended chan struct{}
}

// hangID is the item whose upstream GET hangs until cancelled.
const hangID = "itm-hang"

// hangingUpstream is next, but for a GET of item hangID, which it holds
// until its request ends (or 30 s pass), telling hung and ended.
func hangingUpstream(t *testing.T, next *url.URL, hung, ended chan<- struct{}) *httptest.Server {
	proxy := httputil.NewSingleHostReverseProxy(next)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || r.URL.Path != "/api/v1/items/"+hangID {
			proxy.ServeHTTP(w, r)
			return
		}
		hung <- struct{}{}
		select {
		case <-r.Context().Done():
			ended <- struct{}{}
		case <-time.After(30 * time.Second):
		}
		http.Error(w, "held", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv
}

const fleetRateLimit = 20

func startFleet(t *testing.T) *fleet {
	t.Helper()
	f := &fleet{redis: redistest.Start(t)}
	bin := buildService(t)
	recording, _, seen := recordingCatalog(t)
	f.seen = seen
	f.hung, f.ended = make(chan struct{}, 1), make(chan struct{}, 1)
	recordingURL, _ := url.Parse(recording.URL)
	upstream := hangingUpstream(t, recordingURL, f.hung, f.ended)
	dir := t.TempDir()
	key := filepath.Join(dir, "state.key")
	os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o600)
	tokens := filepath.Join(dir, "tokens.json")
	os.WriteFile(tokens, []byte(`[
		{"token": "t-perm", "subject": "perm", "roles": ["admin"]},
		{"token": "t-rate", "subject": "rate", "roles": ["viewer"]},
		{"token": "t-kill", "subject": "kill", "roles": ["viewer"]},
		{"token": "t-cancel", "subject": "cancel", "roles": ["viewer"]},
		{"token": "t-other", "subject": "other", "roles": ["viewer"]}]`), 0o600)
	env := []string{
		"TOOLROUTE_REDIS=" + f.redis.URL(),
		"TOOLROUTE_STATE_KEY_FILE=" + key,
		"TOOLROUTE_TOKENS=" + tokens,
		"TOOLROUTE_UPSTREAM=" + upstream.URL,
		"TOOLROUTE_CONFIRM_DESTRUCTIVE=true",
		fmt.Sprintf("TOOLROUTE_RATE_LIMIT=%d", fleetRateLimit),
	}
	for range 3 {
		f.replicas = append(f.replicas, startReplica(t, bin, env))
	}
	f.rr, f.lbURL = newRoundRobin(t, f.replicas...)
	return f
}

// TestReplicas runs three example-service processes sharing one Redis,
// behind a round-robin reverse proxy, and checks what they must share.
func TestReplicas(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three example-service processes")
	}
	f := startFleet(t)
	a, b, c := f.replicas[0], f.replicas[1], f.replicas[2]
	ctx := context.Background()

	t.Run("asked on A, answered on B, replayed on C", func(t *testing.T) {
		csA := servertest.ConnectHTTP(t, a.url, "t-perm", asker())
		q, err := csA.CallTool(ctx, &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": "itm-1"}})
		if err != nil || !q.NeedsInput() {
			t.Fatalf("delete_item on A = %+v, %v; want a question", q, err)
		}
		retry := answer("itm-1", q, permission.AllowOnce)
		out, errText, err := callParams(t, servertest.ConnectHTTP(t, b.url, "t-perm", asker()), retry)
		if err != nil || out["deleted"] != true {
			t.Fatalf("the answer on B = %v, %v %s; want deleted", out, err, errText)
		}
		_, err = servertest.ConnectHTTP(t, c.url, "t-perm", asker()).CallTool(ctx, retry)
		var je *jsonrpc.Error
		if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "already used") {
			t.Errorf("the replay on C = %v, want -32602 already used", err)
		}
		if n := deletes(f.seen()); n != 1 {
			t.Errorf("upstream DELETEs = %d, want 1", n)
		}
	})

	t.Run("the rate limit holds across replicas", func(t *testing.T) {
		cs := servertest.ConnectHTTP(t, f.lbURL, "t-rate", servertest.Options{})
		var ok, limited, other atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range 3 * fleetRateLimit {
			wg.Go(func() {
				_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}})
				var je *jsonrpc.Error
				switch {
				case err == nil:
					ok.Add(1)
				case errors.As(err, &je) && je.Code == ratelimit.CodeRateLimited:
					limited.Add(1)
				default:
					other.Add(1)
					t.Errorf("whoami: %v", err)
				}
			})
		}
		wg.Wait()
		elapsed := time.Since(start)
		// The burst, plus what refills while the calls run.
		most := fleetRateLimit + int64(math.Ceil(elapsed.Seconds()*fleetRateLimit)) + 1
		t.Logf("%d calls in %v: %d allowed, %d limited (limit %d/s per caller)", 3*fleetRateLimit, elapsed.Round(time.Millisecond), ok.Load(), limited.Load(), fleetRateLimit)
		if ok.Load() < fleetRateLimit || ok.Load() > most {
			t.Errorf("%d calls allowed, want between %d and %d", ok.Load(), fleetRateLimit, most)
		}
	})

	t.Run("a cancellation posted to another replica cancels the call", func(t *testing.T) {
		answered := make(chan string, 1)
		go func() {
			resp, err := post2025(a.url, "t-cancel", `{"jsonrpc":"2.0","id":"call-1","method":"tools/call","params":{"name":"get_item","arguments":{"id":"`+hangID+`"}}}`)
			if err != nil {
				answered <- err.Error()
				return
			}
			data, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answered <- string(data)
		}()
		select {
		case <-f.hung:
		case <-time.After(10 * time.Second):
			t.Fatal("the call on A never reached the upstream")
		}
		cancel := func(token, id string) {
			t.Helper()
			resp, err := post2025(b.url, token, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"test"}}`)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("notifications/cancelled on B: HTTP %d", resp.StatusCode)
			}
		}
		cancel("t-other", `"call-1"`) // another caller, the same id
		cancel("t-cancel", `1`)       // the same caller, another id
		select {
		case <-f.ended:
			t.Fatal("another caller's cancellation, or another id's, posted to B ended the call on A")
		case <-time.After(500 * time.Millisecond):
		}
		cancel("t-cancel", `"call-1"`)
		select {
		case <-f.ended:
		case <-time.After(10 * time.Second):
			t.Fatalf("the caller's cancellation posted to B did not end its call on A; A's log:\n%s", a.log)
		}
		select {
		case <-answered:
		case <-time.After(10 * time.Second):
			t.Fatal("the cancelled call on A never answered")
		}
		waitLogged(t, a, "outcome=cancelled")
	})

	t.Run("a replica killed mid-run", func(t *testing.T) {
		cs := servertest.ConnectHTTP(t, f.lbURL, "t-kill", servertest.Options{})
		for i := range 18 {
			if i == 6 {
				c.kill()
			}
			if _, errText, err := call(t, cs, "get_item", map[string]any{"id": "itm-2"}); err != nil || errText != "" {
				t.Fatalf("call %d: %v %s", i, err, errText)
			}
		}
		if f.rr.skipped.Load() == 0 {
			t.Error("the proxy never skipped the killed replica: was it killed?")
		}
	})

	t.Run("Redis down fails closed, and recovers", func(t *testing.T) {
		csA := servertest.ConnectHTTP(t, a.url, "t-perm", asker())
		csB := servertest.ConnectHTTP(t, b.url, "t-perm", asker())
		before := deletes(f.seen())
		f.redis.Stop()
		_, errText, err := call(t, csA, "delete_item", map[string]any{"id": "itm-2"})
		if err != nil || !strings.Contains(errText, "cannot check permissions now; nothing was granted") {
			t.Errorf("delete_item while Redis is down = %v %q; want the store error", err, errText)
		}
		if _, errText, err := call(t, csA, "get_item", map[string]any{"id": "itm-2"}); err != nil || errText != "" {
			t.Errorf("get_item while Redis is down (rate limit per process): %v %s", err, errText)
		}
		f.redis.Restart()
		var q *mcp.CallToolResult
		for range 50 { // bounded: the client reconnects on its own
			if q, err = csA.CallTool(ctx, &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": "itm-2"}}); err == nil && q.NeedsInput() {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil || !q.NeedsInput() {
			t.Fatalf("delete_item after Redis came back = %+v, %v; want a question", q, err)
		}
		if out, errText, err := callParams(t, csB, answer("itm-2", q, permission.AllowOnce)); err != nil || out["deleted"] != true {
			t.Errorf("the answer on B after Redis came back = %v, %v %s", out, err, errText)
		}
		if n := deletes(f.seen()) - before; n != 1 {
			t.Errorf("upstream DELETEs during the outage and after = %d, want 1", n)
		}
		// The limiter returns to Redis at its first decision once Redis
		// answers. The question above proves Redis answers A, but that
		// call's decision may have come just before go-redis's probe
		// reconnected: one more call on A makes a decision after it.
		if _, errText, err := call(t, csA, "whoami", nil); err != nil || errText != "" {
			t.Errorf("whoami on A after Redis came back: %v %s", err, errText)
		}
		if log := a.log.String(); !strings.Contains(log, "the rate limit is enforced per process") || !strings.Contains(log, "the rate limit is shared again") {
			t.Errorf("replica A did not log the limiter's fallback and recovery:\n%s", log)
		}
	})
}

// post2025 posts a JSON-RPC message to url as a stateless 2025 client.
func post2025(url, token, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	return http.DefaultClient.Do(req)
}

// waitLogged waits until r's log holds s.
func waitLogged(t *testing.T, r *replica, s string) {
	t.Helper()
	for range 100 {
		if strings.Contains(r.log.String(), s) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Errorf("the replica's log never said %q:\n%s", s, r.log)
}

// callParams is call with whole params.
func callParams(t *testing.T, cs *mcp.ClientSession, p *mcp.CallToolParams) (map[string]any, string, error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), p)
	if err != nil {
		return nil, "", err
	}
	if res.IsError {
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return nil, b.String(), nil
	}
	out, _ := res.StructuredContent.(map[string]any)
	return out, "", nil
}

// BenchmarkReplicas: get_item through the round-robin proxy, from 8
// concurrent callers, served by 1 and by 3 replicas (no Redis, no
// limit). On a machine with few cores this is CPU-bound: more replicas
// do not add capacity. Report it; do not promise it.
func BenchmarkReplicas(b *testing.B) {
	bin := buildService(b)
	upstream := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
	b.Cleanup(upstream.Close)
	for _, n := range []int{1, 3} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			var rs []*replica
			for range n {
				rs = append(rs, startReplica(b, bin, []string{"TOOLROUTE_UPSTREAM=" + upstream.URL}))
			}
			_, lb := newRoundRobin(b, rs...)
			cs := servertest.ConnectHTTP(b, lb, "demo-viewer", servertest.Options{})
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "itm-2"}})
					if err != nil || res.IsError {
						b.Errorf("get_item: %v", err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
		})
	}
}
