package server_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/server"
)

// countingVerifier is v, counting the tokens it is asked to verify.
func countingVerifier(v server.TokenVerifier, n *atomic.Int64) server.TokenVerifier {
	return func(ctx context.Context, token string, r *http.Request) (authz.Caller, error) {
		n.Add(1)
		return v(ctx, token, r)
	}
}

// rssBytes is the process's resident set size, from /proc; 0 where there
// is none.
func rssBytes() int64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// heapBytes is the heap in use after a collection.
func heapBytes() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapInuse)
}

// TestDeclaredBodyReservesNoMemory: 3,000 connections with a valid token,
// each declaring a 4 MiB body and trickling a few bytes of it, hold
// memory for what arrives, not for what is declared (a client could
// otherwise make the server reserve 12 GiB with 3,000 bytes). The server
// still answers a normal request meanwhile.
func TestDeclaredBodyReservesNoMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 3,000 connections")
	}
	const (
		conns    = 3000
		declared = 4 << 20
		rounds   = 5
		rssGoal  = 200 << 20
	)
	// A token per connection: concurrent requests with one token are
	// verified once, and the count tells when every connection is past
	// its verification. The connections come from 16 loopback
	// addresses each (127.0.0.2, ...), as so many clients would: from
	// one, new tokens past 20 in flight would wait their turn (429).
	tokens := maps.Clone(testTokens)
	for i := range conns {
		tokens[fmt.Sprintf("viewer-token-%d", i)] = authz.Caller{Subject: "victor", Roles: []string{"viewer"}}
	}
	var verified atomic.Int64
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{
		Verifier:    countingVerifier(server.StaticTokens(tokens), &verified),
		BodyTimeout: time.Minute, // the test ends the connections itself
	})
	heapBefore := heapBytes()

	cs := make([]net.Conn, 0, conns)
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	for range conns {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, byte((2+len(cs)/16)/256), byte((2+len(cs)/16)%256))}}
		c, err := d.Dial("tcp", hs.Addr())
		if err != nil && len(cs) == 0 {
			t.Skipf("no loopback address but 127.0.0.1: %v", err)
		}
		if err != nil {
			t.Fatalf("connection %d: %v", len(cs), err)
		}
		head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer viewer-token-%d\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n{", hs.Addr(), len(cs), declared)
		cs = append(cs, c)
		if _, err := io.WriteString(c, head); err != nil {
			t.Fatal(err)
		}
		if len(cs)%32 == 0 {
			// At most 32 verifications in flight: past 64, the server
			// answers 503 (verifyguard), as it did on a loaded machine.
			waitFor(t, "the connections' tokens to be verified", func() bool { return verified.Load() >= int64(len(cs)) })
		}
	}
	waitFor(t, "every connection's token to be verified", func() bool { return verified.Load() >= conns })

	var peakRSS, peakHeap int64
	for range rounds {
		for i, c := range cs {
			if _, err := io.WriteString(c, `"jsonrpc":"2.0", `); err != nil {
				t.Fatalf("connection %d: %v", i, err)
			}
		}
		time.Sleep(50 * time.Millisecond)
		peakRSS = max(peakRSS, rssBytes())
		peakHeap = max(peakHeap, heapBytes()-heapBefore)
	}

	// Meanwhile, a caller is served.
	resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("a request among the trickling ones: HTTP %d", resp.StatusCode)
	}

	t.Logf("%d connections declaring %d bytes each: heap grew by %.1f MB, RSS peaked at %.1f MB (race detector: %v)",
		conns, declared, float64(peakHeap)/1e6, float64(peakRSS)/1e6, raceEnabled)
	// The goal is the RSS; under the race detector, whose shadow memory
	// multiplies it, the heap stands for it.
	if peakHeap > rssGoal*3/4 {
		t.Errorf("the heap grew by %d MB for %d connections that sent a few bytes each (declared: %d MiB each)", peakHeap>>20, conns, declared>>20)
	}
	if !raceEnabled && peakRSS > rssGoal {
		t.Errorf("RSS peaked at %d MB, want < %d MB", peakRSS>>20, rssGoal>>20)
	}
}

// TestBodyBudget: bodies being read hold at most a bounded amount of
// memory as a whole. With MaxRequestBodyBytes of 1 MiB (a budget of 16
// such bodies past each one's first 64 KiB), 20 clients that each send
// all but the last byte of a 1 MiB body cannot all be read: some get
// HTTP 503 with Retry-After, while a small request is served, and once
// the large ones are gone, a large body is read again.
func TestBodyBudget(t *testing.T) {
	const (
		maxBody = 1 << 20
		clients = 20
	)
	hs := startHTTP(t, newTestServer(t, server.Options{}, newDeps("a")), server.HTTPOptions{MaxRequestBodyBytes: maxBody})

	// A body that the server reads in full but which never ends: it is
	// held until the connection closes.
	pad := strings.Repeat(" ", maxBody-len(initializeBody))
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer viewer-token\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", hs.Addr(), maxBody)
	almost := (initializeBody + pad)[:maxBody-1]

	type answer struct {
		status     int
		retryAfter string
	}
	answers := make(chan answer, clients)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var cs []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range cs {
			c.Close()
		}
		wg.Wait()
	})
	for range clients {
		c, err := net.Dial("tcp", hs.Addr())
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		cs = append(cs, c)
		mu.Unlock()
		wg.Add(2)
		go func() {
			defer wg.Done()
			io.WriteString(c, head+almost) // blocks once the server stops reading
		}()
		go func() {
			defer wg.Done()
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return // closed by the test
			}
			resp.Body.Close()
			answers <- answer{resp.StatusCode, resp.Header.Get("Retry-After")}
		}()
	}

	select {
	case a := <-answers:
		if a.status != http.StatusServiceUnavailable || a.retryAfter == "" {
			t.Errorf("a body past the budget: HTTP %d, Retry-After %q; want 503 with Retry-After", a.status, a.retryAfter)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("none of %d held 1 MiB bodies was refused", clients)
	}

	if resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody); resp.StatusCode != http.StatusOK {
		t.Errorf("a small request while the budget is spent: HTTP %d, want 200", resp.StatusCode)
	}

	mu.Lock()
	for _, c := range cs {
		c.Close()
	}
	cs = nil
	mu.Unlock()
	waitFor(t, "a large body to be read again", func() bool {
		resp := post(t, hs.URL(), "Bearer "+secretToken, initializeBody+pad)
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode == http.StatusOK
	})
}
