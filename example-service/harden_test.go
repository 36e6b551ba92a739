package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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
