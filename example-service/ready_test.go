package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProxyReadiness: while the RBAC proxy is unreachable, /readyz
// answers 503 naming it, and a request's failure is logged with its
// cause; once the proxy is back on its address, /readyz answers 200 again
// by itself.
func TestProxyReadiness(t *testing.T) {
	handler := rbacProxy(t).Config.Handler
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	serveProxy := func(ln net.Listener) *http.Server {
		srv := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
		go srv.Serve(ln)
		return srv
	}
	proxy := serveProxy(ln)
	upstream, _, _ := recordingCatalog(t)
	url, stderr := start(t, "-proxy-auth", "http://"+addr, "-upstream", upstream.URL)
	readyz := strings.TrimSuffix(url, "/mcp") + "/readyz"
	probe := func() (int, string) {
		t.Helper()
		resp, err := http.Get(readyz)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp.StatusCode, string(b)
	}
	waitReady := func(want int, body string) {
		t.Helper()
		var got int
		var text string
		for range 300 {
			if got, text = probe(); got == want && strings.Contains(text, body) {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Fatalf("/readyz answers %d %q, want %d with %q", got, text, want, body)
	}
	waitReady(http.StatusOK, "ready")

	proxy.Close() // the proxy goes down
	waitReady(http.StatusServiceUnavailable, "not ready: a dependency is unavailable")
	if _, text := probe(); strings.Contains(text, addr) {
		t.Errorf("/readyz shows the proxy's address to whoever asks: %q", text)
	}
	resp := postRaw(t, url, "Bearer proxy-reader", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("tools/list while the proxy is down: HTTP %d, want 503", resp.StatusCode)
	}
	if !stderr.waitFor("token verification failed", "connection refused") {
		t.Errorf("the log does not name the cause of the failure:\n%s", stderr)
	}
	if !stderr.waitFor("toolroute: not ready", "RBAC proxy") {
		t.Errorf("the log does not say the service is not ready:\n%s", stderr)
	}

	// The proxy comes back on its address.
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the proxy cannot listen on %s again: %v", addr, err)
	}
	proxy = serveProxy(ln)
	defer proxy.Close()
	waitReady(http.StatusOK, "ready")
	if !stderr.waitFor("toolroute: ready again") {
		t.Errorf("the log does not say the service is ready again:\n%s", stderr)
	}
	if resp := postRaw(t, url, "Bearer proxy-reader", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); resp.StatusCode != http.StatusOK {
		t.Errorf("tools/list once the proxy is back: HTTP %d, want 200", resp.StatusCode)
	}
}
