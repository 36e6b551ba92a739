package main

import (
	"crypto/rand"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/flood"
)

// countingProxy is [rbacProxy] (authz/devproxy, a real RBAC proxy's
// auth API), counting the requests to each path.
type countingProxy struct {
	*httptest.Server
	mu sync.Mutex
	n  map[string]int
}

func startCountingProxy(t *testing.T) *countingProxy {
	p := &countingProxy{n: map[string]int{}}
	h := rbacProxyHandler()
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		p.n[r.URL.Path]++
		p.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *countingProxy) requests(path string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n[path]
}

// TestProxyAuthFlood: with -proxy-auth the RBAC proxy judges every
// bearer (its batch endpoint); strangers' bearers cost it next to
// nothing. 20,000 random bearers cause at most 1 % as many batch
// requests, one unknown token sent 1,000 times at most one, and a
// caller whose token works, from the same address, is served meanwhile.
func TestProxyAuthFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods the service with 21,000 requests")
	}
	const (
		bearers = 20_000
		workers = 32
		repeats = 1_000
		batch   = "/api/v3/auth-routes"
	)
	proxy := startCountingProxy(t)
	upstream, _, _ := recordingCatalog(t)
	url, _ := start(t, "-proxy-auth", proxy.URL, "-upstream", upstream.URL)
	caller := flood.New(t, url, 1)
	quiet, failed := caller.Latencies("proxy-reader", 300, nil)
	if failed > 0 {
		t.Fatalf("%d of the valid caller's %d quiet requests failed", failed, len(quiet))
	}

	before := proxy.requests(batch)
	var statuses map[int]int
	began := time.Now()
	under, underFailed := caller.During("proxy-reader", 50, func() {
		statuses = flood.New(t, url, workers).Send(bearers, workers, func(int) string { return rand.Text() })
	})
	elapsed := time.Since(began)
	asked := proxy.requests(batch) - before
	t.Logf("%d random bearers in %v (%d workers): answers %v; %d batch requests to the RBAC proxy (%.3f %%)",
		bearers, elapsed.Round(time.Millisecond), workers, statuses, asked, 100*float64(asked)/bearers)
	t.Logf("valid caller: quiet p50 %v p99 %v (%d requests); under the flood p50 %v p99 %v (%d requests, %d failed)",
		flood.Percentile(quiet, 50), flood.Percentile(quiet, 99), len(quiet),
		flood.Percentile(under, 50), flood.Percentile(under, 99), len(under), underFailed)
	if asked > bearers/100 {
		t.Errorf("%d random bearers caused %d batch requests to the RBAC proxy, want at most %d", bearers, asked, bearers/100)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != bearers {
		t.Errorf("answers to random bearers: %v, want only 401 and 429", statuses)
	}
	if underFailed > 0 {
		t.Errorf("%d of the valid caller's %d requests under the flood failed", underFailed, len(under))
	}

	// One unknown token, again and again, on a service of its own (this
	// address is over its limit on the first).
	url, _ = start(t, "-proxy-auth", proxy.URL, "-upstream", upstream.URL)
	before = proxy.requests(batch)
	unknown := rand.Text()
	statuses = flood.New(t, url, workers).Send(repeats, workers, func(int) string { return unknown })
	asked = proxy.requests(batch) - before
	t.Logf("one unknown token %d times: answers %v; %d batch requests", repeats, statuses, asked)
	if asked > 1 {
		t.Errorf("one unknown token sent %d times caused %d batch requests, want at most 1", repeats, asked)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != repeats {
		t.Errorf("answers to an unknown token: %v, want only 401 and 429", statuses)
	}
}
