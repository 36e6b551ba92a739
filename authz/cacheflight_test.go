package authz_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// slowProxy is a real RBAC proxy allowing everything after a delay,
// counting the requests it gets.
func slowProxy(t testing.TB, delay time.Duration) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		time.Sleep(delay)
		if r.URL.Path == "/api/v3/auth-routes" {
			var q []routeQuery
			json.NewDecoder(r.Body).Decode(&q)
			for i := range q {
				yes := true
				q[i].AuthResult = &yes
			}
			json.NewEncoder(w).Encode(q)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// TestCachedCollapsesConcurrentMisses: one caller's 100 simultaneous
// first calls of a tool cost one request to the RBAC proxy — the call
// guard's batch decision, shared by all, whose answer then serves the
// upstream transport's decision from the cache too.
func TestCachedCollapsesConcurrentMisses(t *testing.T) {
	proxy, requests := slowProxy(t, 20*time.Millisecond)
	h := newHarness(t, harnessOptions{
		authorizer: authz.Cached(&authz.ProxyAuth{BaseURL: proxy.URL}, time.Minute, 1000),
		caller:     &viewer,
	})
	var wg sync.WaitGroup
	errs := make(chan error, 100)
	for range 100 {
		wg.Go(func() {
			res, err := h.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_items", Arguments: map[string]any{}})
			if err == nil && res.IsError {
				err = errors.New("isError result")
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("list_items: %v", err)
		}
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the proxy got %d requests for 100 simultaneous first calls, want 1", n)
	}
	if n := len(h.upstream.sends()); n != 100 {
		t.Errorf("upstream got %d requests, want 100", n)
	}
}

// TestCachedSharedQuestionOutlivesAnAsker: an asker that gives up stops
// waiting at once, with an outage error, and does not fail the others
// waiting for the same decision.
func TestCachedSharedQuestionOutlivesAnAsker(t *testing.T) {
	proxy, requests := slowProxy(t, 200*time.Millisecond)
	a := authz.Cached(&authz.ProxyAuth{BaseURL: proxy.URL}, time.Minute, 1000)
	route := catalog("GET", "/api/v1/items")
	impatient, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var patientErr, impatientErr error
	wg.Go(func() { impatientErr = a.Allow(impatient, viewer, route) })
	time.Sleep(20 * time.Millisecond) // the impatient asker's question is on its way
	wg.Go(func() { patientErr = a.Allow(context.Background(), viewer, route) })
	time.Sleep(20 * time.Millisecond)
	cancel()
	wg.Wait()
	if errKind(impatientErr) != "outage" || !errors.Is(impatientErr, context.Canceled) {
		t.Errorf("the asker that gave up: %v, want an outage wrapping context.Canceled", impatientErr)
	}
	if patientErr != nil {
		t.Errorf("the asker that waited: %v", patientErr)
	}
	got, err := a.AllowMany(context.Background(), viewer, []tool.Route{route})
	if err != nil || !got[0] {
		t.Errorf("AllowMany after = %v, %v", got, err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("the proxy got %d requests, want 1", n)
	}
}

// BenchmarkCachedFirstBurst: one caller's 200 concurrent first
// decisions (fresh cache each time) and the proxy requests they cost.
func BenchmarkCachedFirstBurst(b *testing.B) {
	proxy, requests := slowProxy(b, time.Millisecond)
	route := catalog("GET", "/api/v1/items")
	requests.Store(0)
	for b.Loop() {
		a := authz.Cached(&authz.ProxyAuth{BaseURL: proxy.URL}, time.Minute, 1000)
		var wg sync.WaitGroup
		for range 200 {
			wg.Go(func() {
				if _, err := a.AllowMany(context.Background(), viewer, []tool.Route{route}); err != nil {
					b.Error(err)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(requests.Load())/float64(b.N), "proxy-requests/burst")
}
