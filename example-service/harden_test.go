package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/server/servertest"
)

// TestProxyAuthGarbage: an RBAC proxy that answers HTTP 200 with a
// garbage body on every endpoint identifies no token, so a bearer it was
// asked about gets no further than an outage (HTTP 503), not even to
// whoami.
func TestProxyAuthGarbage(t *testing.T) {
	var asked atomic.Int64
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html>welcome</html>")
	}))
	t.Cleanup(proxy.Close)
	upstream, _, seen := recordingCatalog(t)
	url, stderr := start(t, "-proxy-auth", proxy.URL, "-upstream", upstream.URL)
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"get_item","arguments":{"id":"itm-1"}}}`,
	} {
		resp := postRaw(t, url, "Bearer bogus-token-123", msg)
		if resp.StatusCode != http.StatusServiceUnavailable {
			t.Errorf("%s with a garbage-answering proxy: HTTP %d, want 503 (an outage, neither served nor blamed on the token)", msg, resp.StatusCode)
		}
	}
	if asked.Load() == 0 {
		t.Error("the proxy was never asked")
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("upstream requests: %q, want none", got)
	}
	if strings.Contains(stderr.String(), "bogus-token-123") {
		t.Errorf("the bearer reached the log:\n%s", stderr)
	}
}

// TestPolicyMustDefineTheRoles: a policy that defines no role, or grants
// nothing, does not start, whatever roles the tokens and -anonymous name;
// and a role the policy does not define is refused.
func TestPolicyMustDefineTheRoles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	empty := write("empty.json", "")
	blank := write("blank.json", " \n")
	none := write("none.json", "[]")
	nothing := write("nothing.json", `[{"role": "superuser", "accessPolicies": [{"path": "^/", "methods": ["GET"], "effect": "deny"}]}, {"role": "x", "accessPolicies": []}]`)
	viewer := write("viewer.json", `[{"role": "viewer", "accessPolicies": [{"path": "^/catalog/", "methods": ["GET"], "effect": "allow"}]}]`)
	tokens := write("tokens.json", `[{"token": "tok-9", "subject": "root@x", "roles": ["superuser"]}]`)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-policy", empty}, "-policy " + empty + ": the file is empty: want a JSON array of role policies"},
		{[]string{"-policy", blank}, "-policy " + blank + ": the file is empty"},
		{[]string{"-policy", none, "-anonymous", "superuser"}, "-policy " + none + ": the policy defines no role"},
		{[]string{"-policy", none, "-tokens", tokens}, "-policy " + none + ": the policy defines no role"},
		{[]string{"-policy", nothing, "-tokens", tokens}, `the policy allows nothing (no access policy of its roles "superuser", "x" has effect "allow")`},
		{[]string{"-policy", viewer, "-tokens", tokens}, `entry 0 (subject "root@x"): the policy has no role "superuser"`},
		{[]string{"-policy", viewer, "-tokens", tokens, "-anonymous", "superuser"}, `the policy has no role "superuser"`},
	}
	for _, tt := range tests {
		var stderr bytes.Buffer
		// A service that wrongly starts serves until the bound, then
		// stops without an error.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := run(ctx, append([]string{"-addr", "127.0.0.1:0"}, tt.args...), strings.NewReader(""), io.Discard, &stderr)
		cancel()
		if err == nil {
			t.Errorf("run %q: started", tt.args)
			continue
		}
		if got := err.Error(); !strings.Contains(got, tt.want) {
			t.Errorf("run %q: %q does not contain %q", tt.args, got, tt.want)
		}
		if strings.Contains(err.Error()+stderr.String(), "tok-9") {
			t.Errorf("run %q: the token appears in the error: %v", tt.args, err)
		}
	}
}

// TestUpstreamConnectionReuse: 500 calls at 50 concurrent reach the
// catalog over about 50 connections, reused, not one per request (the
// default pool keeps 2 idle connections a host).
func TestUpstreamConnectionReuse(t *testing.T) {
	store := catalog.NewStore(catalog.DemoItems()...)
	var accepted atomic.Int64
	upstream := httptest.NewUnstartedServer(catalog.NewHandler(store))
	upstream.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			accepted.Add(1)
		}
	}
	upstream.Start()
	t.Cleanup(upstream.Close)
	url, _ := start(t, "-upstream", upstream.URL)
	cs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{})

	const workers, calls = 50, 500
	var failed atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range calls / workers {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "itm-1"}})
				cancel()
				if err != nil || res.IsError {
					failed.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if n := failed.Load(); n > 0 {
		t.Fatalf("%d of %d calls failed", n, calls)
	}
	// Each worker holds at most one upstream request at a time; a few
	// more connections may open while others are being returned to the
	// pool.
	if n := accepted.Load(); n > workers+workers/5 {
		t.Errorf("%d calls at %d concurrent opened %d upstream connections, want at most about %d", calls, workers, n, workers)
	} else {
		t.Logf("%d calls at %d concurrent opened %d upstream connections", calls, workers, n)
	}
}

// TestAddressInUse: a taken -addr fails the start with one clear message
// (main prints the error; nothing else repeats it).
func TestAddressInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	var stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err = run(ctx, []string{"-addr", addr}, strings.NewReader(""), io.Discard, &stderr)
	want := "-addr " + addr + ": the address is already in use (another process listens there): stop it or choose another address with -addr"
	if err == nil || err.Error() != want {
		t.Fatalf("run: %v, want %q", err, want)
	}
	if n := strings.Count(stderr.String(), "in use"); n != 0 {
		t.Errorf("standard error repeats the failure %d times:\n%s", n, &stderr)
	}
}

// TestLookAlikeIDs: an id that Unicode normalization (NFKC) turns into
// ".." or a value holding "/" never reaches the catalog.
func TestLookAlikeIDs(t *testing.T) {
	upstream, _, seen := recordingCatalog(t)
	url, _ := start(t, "-upstream", upstream.URL)
	cs := servertest.ConnectHTTP(t, url, "demo-admin", servertest.Options{})
	for _, id := range []string{"\uFE30", "\u2025", "\u2100", "\u2101", "\u2105", "\u2106", "a\uFF0Fb", "..\uFF05\uFF12\uFF26x", "%EF%B8%B0"} {
		for _, name := range []string{"get_item", "delete_item"} {
			out, errText, err := call(t, cs, name, map[string]any{"id": id})
			if err != nil || !strings.HasPrefix(errText, `invalid argument "id": `) {
				t.Errorf("%s %q: %v, error %v, text %q; want an invalid id", name, id, out, err, errText)
			}
		}
	}
	if got := seen(); len(got) != 0 {
		t.Errorf("the catalog received %q", got)
	}
}
