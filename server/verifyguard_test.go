package server_test

import (
	"context"
	"crypto/rand"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/server"
)

// A caller whose token was verified before keeps being served while its
// address is over its limit on refused tokens (which answers 429 with
// Retry-After): an attacker at the same address (NAT) cannot lock it
// out. A token new to the server from that address waits its turn.
func TestGuardServesKnownCallerOverLimit(t *testing.T) {
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{})
	if resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid token: HTTP %d", resp.StatusCode)
	}
	limited := 0
	for i := 0; i < 100 && limited == 0; i++ { // the limit allows 20 at once
		resp := post(t, hs.URL(), "Bearer "+rand.Text(), initializeBody)
		switch resp.StatusCode {
		case http.StatusUnauthorized:
		case http.StatusTooManyRequests:
			limited = i
			if resp.Header.Get("Retry-After") == "" {
				t.Error("a 429 without Retry-After")
			}
		default:
			t.Fatalf("a random token: HTTP %d", resp.StatusCode)
		}
	}
	if limited == 0 {
		t.Fatal("100 random tokens from one address, and none got 429")
	}
	t.Logf("the first 429 after %d refused tokens", limited)
	for range 5 {
		if resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody); resp.StatusCode != http.StatusOK {
			t.Fatalf("a token verified before, from an address over its limit: HTTP %d, want 200", resp.StatusCode)
		}
	}
	if resp := post(t, hs.URL(), "Bearer viewer-token", initializeBody); resp.StatusCode != http.StatusTooManyRequests {
		t.Errorf("a valid token new to the server, from an address over its limit: HTTP %d, want 429", resp.StatusCode)
	}
	if resp := post(t, hs.URL(), "", initializeBody); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("no token, from an address over its limit: HTTP %d, want 401", resp.StatusCode)
	}
}

// Past 64 verifications of unknown tokens in flight, a request is
// answered 503 with Retry-After at once instead of waiting its turn.
// The clients come from distinct loopback addresses (127.0.0.2, ...),
// so that no address reaches its own limit.
func TestGuardBoundsVerificationsInFlight(t *testing.T) {
	const bound = 64
	release := make(chan struct{})
	var inFlight, most atomic.Int64
	slow := func(ctx context.Context, token string, _ *http.Request) (authz.Caller, error) {
		n := inFlight.Add(1)
		defer inFlight.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		return authz.Caller{}, server.ErrInvalidToken
	}
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{Verifier: slow})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	t.Cleanup(free) // before the server's shutdown, which waits for the requests
	from := func(ip string) *http.Client {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
		return &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	}
	send := func(c *http.Client) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, hs.URL(), strings.NewReader(initializeBody))
		for k, v := range mcptest.Header("Bearer "+rand.Text(), "") {
			req.Header[k] = v
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		return c.Do(req)
	}
	probe := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	if c, err := probe.Dial("tcp", hs.Addr()); err != nil {
		t.Skipf("no loopback address but 127.0.0.1: %v", err)
	} else {
		c.Close()
	}
	type answer struct {
		status     int
		retryAfter string
	}
	const clients = bound + 16 // 16 per address: within each one's limit
	answers := make(chan answer, clients)
	var wg sync.WaitGroup
	for i := range clients {
		c := from("127.0.0." + strconv.Itoa(2+i/16))
		wg.Go(func() {
			resp, err := send(c)
			if err != nil {
				answers <- answer{}
				return
			}
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After")}
		})
	}
	// While 64 verifications wait, the others are answered at once.
	for range clients - bound {
		a := await.Recv(t, answers, "an answer past the bound")
		if a.status != http.StatusServiceUnavailable || a.retryAfter == "" {
			t.Errorf("past the bound: HTTP %d, Retry-After %q; want 503 with Retry-After", a.status, a.retryAfter)
		}
	}
	waitFor(t, "64 verifications in flight", func() bool { return inFlight.Load() == bound })
	free()
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.status != http.StatusUnauthorized {
			t.Errorf("a verification within the bound: HTTP %d, want 401", a.status)
		}
	}
	if n := most.Load(); n != bound {
		t.Errorf("%d verifications in flight at most, want %d", n, bound)
	}
}
