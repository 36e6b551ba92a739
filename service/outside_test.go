package service_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/proc"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/server/servertest"
)

// The acceptance tests of the kit: things-mcp (testdata/things), a
// service written against the README's "Service kit" section alone, is
// built as a module of its own outside this one, and gets every
// production capability from flags and TOOLROUTE_* variables.

// outside is the things-mcp binary, built once.
var outside struct {
	once  sync.Once
	bin   string
	lines int
	err   error
}

// buildOutside builds testdata/things as the module example.com/things
// in a temporary directory, requiring this module through a replace
// directive (the module cache holds every dependency: this module
// needs them too).
func buildOutside(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds a service module: not with -short")
	}
	outside.once.Do(func() {
		dir, err := os.MkdirTemp("", "things-mcp")
		if err != nil {
			outside.err = err
			return
		}
		root, _ := filepath.Abs("..")
		if err := os.CopyFS(dir, os.DirFS("testdata/things")); err != nil {
			outside.err = err
			return
		}
		gomod := "module example.com/things\n\ngo 1.26.0\n\nrequire github.com/toolroute/toolroute v0.0.0\n\nreplace github.com/toolroute/toolroute => " + root + "\n"
		sum, _ := os.ReadFile(filepath.Join(root, "go.sum"))
		os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644)
		os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644)
		for _, f := range []string{"main.go", "tools/tools.go", "tools/get_thing.go"} {
			data, _ := os.ReadFile(filepath.Join(dir, f))
			outside.lines += strings.Count(string(data), "\n")
		}
		outside.bin = proc.Build(t, dir, filepath.Join(dir, "things-mcp"))
	})
	if outside.err != nil {
		t.Fatal(outside.err)
	}
	if outside.bin == "" {
		t.Fatal("things-mcp did not build (see the first test's failure)")
	}
	t.Logf("things-mcp: %d lines of Go (main and tools)", outside.lines)
	return outside.bin
}

// thingsAPI is the upstream things API: GET /api/v1/things/{id}. It
// records the Authorization header of each request.
func thingsAPI(t *testing.T) (*httptest.Server, func() []string) {
	var (
		mu   sync.Mutex
		auth []string
	)
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/things/{id}", func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = append(auth, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]string{"id": r.PathValue("id"), "name": "thing " + r.PathValue("id")})
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), auth...) }
}

func writeFile(t *testing.T, name, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// getThing calls get_thing as the caller of token and returns the
// thing's name, or the tool error's text.
func getThing(t *testing.T, cs *mcp.ClientSession, id string) (name string, toolErr string, err error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": id}})
	if err != nil {
		return "", "", err
	}
	if res.IsError {
		return "", res.Content[0].(*mcp.TextContent).Text, nil
	}
	var out struct{ Name string }
	data, _ := json.Marshal(res.StructuredContent)
	json.Unmarshal(data, &out)
	return out.Name, "", nil
}

// TestOutsideStaticTokens: static tokens and a role policy from files,
// the upstream from TOOLROUTE_UPSTREAM_THINGS, a rate limit shared
// through a real Redis, Prometheus metrics, an audit file and a drain,
// all from flags and variables.
func TestOutsideStaticTokens(t *testing.T) {
	bin := buildOutside(t)
	rdb := redistest.Start(t)
	api, auth := thingsAPI(t)
	audit := filepath.Join(t.TempDir(), "audit.jsonl")
	p := proc.Start(t, bin, proc.Options{Env: []string{
		"TOOLROUTE_UPSTREAM_THINGS=" + api.URL,
		"TOOLROUTE_REDIS=" + rdb.URL(),
		"TOOLROUTE_STATE_KEY_FILE=" + writeFile(t, "state.key", strings.Repeat("k", 32)),
		"TOOLROUTE_RATE_LIMIT=1",
		"TOOLROUTE_DRAIN_DELAY=300ms",
	}},
		"-addr", "127.0.0.1:0",
		"-policy", "testdata/things/policy.json", "-tokens", "testdata/things/tokens.json",
		"-metrics-addr", "127.0.0.1:0", "-audit", audit,
	)
	metrics := p.Wait(t, `Prometheus metrics at (http://\S+)`)
	url := p.Wait(t, `serving MCP at (http://\S+)`)

	cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
	if name, toolErr, err := getThing(t, cs, "t-1"); err != nil || name != "thing t-1" {
		t.Fatalf("get_thing = %q, %q, %v", name, toolErr, err)
	}
	if got := auth(); len(got) != 1 || got[0] != "Bearer viewer-token" {
		t.Errorf("the upstream saw Authorization %q, want the caller's bearer", got)
	}
	// The limit lives in Redis: a key of this service holds it (for
	// the second after a call).
	opts, _ := redis.ParseURL(rdb.URL())
	rc := redis.NewClient(opts)
	defer rc.Close()
	if keys, err := rc.Keys(context.Background(), "rate:toolroute:things-mcp:*").Result(); err != nil || len(keys) == 0 {
		t.Errorf("Redis keys rate:toolroute:things-mcp:* = %q, %v; want the rate limit's", keys, err)
	}

	// One call per second, in bursts of one: the second within the
	// second is refused, with the rate limit's code.
	_, _, err := getThing(t, cs, "t-2")
	if !isRateLimited(err) {
		t.Errorf("the second call within a second = %v, want the rate limit's error %d", err, ratelimit.CodeRateLimited)
	}
	resp, err := http.Get(metrics)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `gen_ai_tool_name="get_thing"`) {
		t.Errorf("the metrics name no call of get_thing:\n%.2000s", body)
	}
	rec, _ := os.ReadFile(audit)
	if !strings.Contains(string(rec), `"get_thing"`) || !strings.Contains(string(rec), `"vera"`) {
		t.Errorf("the audit file lacks the call of vera: %s", rec)
	}

	// The drain: after SIGTERM, /readyz answers 503 while calls still
	// get through, for the drain delay.
	base := strings.TrimSuffix(url, "/mcp")
	p.Interrupt()
	got := 0
	for range 100 { // bounded: until the drain shows
		resp, err := http.Get(base + "/readyz")
		if err == nil {
			got = resp.StatusCode
			resp.Body.Close()
		}
		if got == http.StatusServiceUnavailable {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	if got != http.StatusServiceUnavailable {
		t.Errorf("/readyz while draining = %d, want 503", got)
	}
	await.Recv(t, p.Exited(), "the exit after the drain")
	if p.Err() != nil {
		t.Errorf("things-mcp exited with %v:\n%s", p.Err(), p)
	}
}

func isRateLimited(err error) bool {
	var we *jsonrpc.Error
	return errors.As(err, &we) && we.Code == ratelimit.CodeRateLimited
}

// TestOutsideRefusals: a configuration the kit refuses stops the start
// with one clear line and a non-zero status, naming the flag.
func TestOutsideRefusals(t *testing.T) {
	bin := buildOutside(t)
	for _, tt := range []struct {
		args []string
		env  []string
		want string
	}{
		{[]string{"-policy", "testdata/things/policy.json", "-tokens", "testdata/things/tokens.json"}, nil,
			`tool get_thing needs the upstream service "things": give its URL with -upstream things=URL or TOOLROUTE_UPSTREAM_THINGS=URL`},
		{[]string{"-tokens", "testdata/things/tokens.json", "-upstream", "http://127.0.0.1:9"}, nil, "no role policy: give -policy FILE"},
		{[]string{"-policy", "testdata/things/policy.json", "-upstream", "http://127.0.0.1:9"}, nil, "no way to identify HTTP callers: give -tokens FILE, -oidc-issuer URL (with -audience) or -proxy-auth URL"},
		{[]string{"-policy", "testdata/things/policy.json", "-tokens", "testdata/things/tokens.json", "-upstream", "stuff=http://127.0.0.1:9"}, nil,
			`-upstream stuff=http://127.0.0.1:9: no tool needs the service "stuff" (the tools need "things")`},
		{nil, []string{"TOOLROUTE_UPSTREAM_THINGS=http://127.0.0.1:9/api"}, "TOOLROUTE_UPSTREAM_THINGS (-upstream things=URL)"},
		{nil, []string{"TOOLROUTE_RATELIMIT=5"}, "environment variable TOOLROUTE_RATELIMIT names no flag"},
	} {
		t.Run(strings.Join(append(tt.args, tt.env...), " "), func(t *testing.T) {
			for _, sub := range []string{"serve", "check"} {
				cmd := exec.Command(bin, append([]string{sub, "-addr", "127.0.0.1:0"}, tt.args...)...)
				if sub == "check" {
					cmd.Args = append([]string{bin, sub}, tt.args...)
				}
				cmd.Env = append(os.Environ(), tt.env...)
				out, err := cmd.CombinedOutput()
				if err == nil || !strings.Contains(string(out), tt.want) {
					t.Errorf("%s: %v, output lacks %q:\n%s", sub, err, tt.want, out)
				}
			}
		})
	}
}

// TestOutsideOAuth: OAuth mode against the kit's own dev-idp, from
// flags alone: a token minted for a role sees that role's tools, the
// upstream gets no token (the caller's is never passed through), and a
// token for another audience gets HTTP 401.
func TestOutsideOAuth(t *testing.T) {
	bin := buildOutside(t)
	api, auth := thingsAPI(t)
	idp := proc.Start(t, bin, proc.Options{}, "dev-idp", "-addr", "127.0.0.1:0", "-audience", "things-mcp")
	issuer := idp.Wait(t, `issuer (http://\S+)`)
	idp.Wait(t, `serving until interrupted`)
	p := proc.Start(t, bin, proc.Options{}, "-addr", "127.0.0.1:0", "-upstream", api.URL,
		"-policy", "testdata/things/policy.json",
		"-oidc-issuer", issuer, "-audience", "things-mcp", "-public-url", "http://127.0.0.1/mcp")
	url := p.Wait(t, `serving MCP at (http://\S+)`)

	mint := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(bin, append([]string{"dev-idp", "token", "-issuer", issuer}, args...)...).Output()
		if err != nil {
			t.Fatalf("dev-idp token %q: %v", args, err)
		}
		return strings.TrimSpace(string(out))
	}
	cs := servertest.ConnectHTTP(t, url, mint("-roles", "viewer", "-audience", "things-mcp", "-subject", "alice"), servertest.Options{})
	if name, toolErr, err := getThing(t, cs, "t-1"); err != nil || name != "thing t-1" {
		t.Fatalf("get_thing as a minted viewer = %q, %q, %v", name, toolErr, err)
	}
	if got := auth(); len(got) != 1 || got[0] != "" {
		t.Errorf("the upstream saw Authorization %q, want none", got)
	}
	// A role the policy does not grant sees nothing to call.
	cs = servertest.ConnectHTTP(t, url, mint("-roles", "intern", "-audience", "things-mcp"), servertest.Options{})
	if _, toolErr, err := getThing(t, cs, "t-1"); err == nil && toolErr == "" {
		t.Errorf("an intern called get_thing")
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer "+mint("-roles", "viewer", "-audience", "someone-else"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token for another audience: HTTP %d, want 401", resp.StatusCode)
	}
}

// TestOutsideProxyAuth: proxy auth against the kit's own dev-proxy,
// from flags alone: the proxy judges the bearer (one it does not know
// gets HTTP 401 before any tool runs), the call goes through, and the
// bearer is forwarded upstream.
func TestOutsideProxyAuth(t *testing.T) {
	bin := buildOutside(t)
	api, auth := thingsAPI(t)
	proxy := proc.Start(t, bin, proc.Options{}, "dev-proxy", "-addr", "127.0.0.1:0",
		"-policy", "testdata/things/policy.json", "-tokens", "testdata/things/tokens.json")
	proxyURL := proxy.Wait(t, `-proxy-auth (http://\S+)`)
	p := proc.Start(t, bin, proc.Options{Env: []string{"TOOLROUTE_PROXY_AUTH=" + proxyURL, "TOOLROUTE_UPSTREAM=" + api.URL}}, "-addr", "127.0.0.1:0")
	url := p.Wait(t, `serving MCP at (http://\S+)`)

	cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
	if name, toolErr, err := getThing(t, cs, "t-1"); err != nil || name != "thing t-1" {
		t.Fatalf("get_thing through dev-proxy = %q, %q, %v", name, toolErr, err)
	}
	if got := auth(); len(got) != 1 || got[0] != "Bearer viewer-token" {
		t.Errorf("the upstream saw Authorization %q, want the caller's bearer", got)
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", "Bearer not-a-token-of-the-file")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a token dev-proxy does not know: HTTP %d, want 401", resp.StatusCode)
	}
}
