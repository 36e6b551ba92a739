// Package flood sends bounded floods of MCP requests to a server on the
// loopback interface, and measures a caller's latency meanwhile, for the
// tests that hold the server's token verification to its bounds. Only
// tests may import it (see internal/testing/layout).
package flood

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// listTools is the request every flood sends: an MCP tools/list.
const listTools = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// Client posts MCP requests to one loopback endpoint. Create it with
// [New].
type Client struct {
	url string
	hc  *http.Client
}

// New returns a client of url, keeping up to conns connections open. It
// fails the test unless url's host is a loopback address: a flood never
// leaves the machine.
func New(tb testing.TB, endpoint string, conns int) *Client {
	tb.Helper()
	u, err := url.Parse(endpoint)
	if err != nil {
		tb.Fatalf("flood: %v", err)
	}
	ip := net.ParseIP(u.Hostname())
	if ip == nil || !ip.IsLoopback() {
		tb.Fatalf("flood: %s is not a loopback address", u.Host)
	}
	tr := &http.Transport{MaxIdleConns: conns, MaxIdleConnsPerHost: conns, MaxConnsPerHost: conns, DisableCompression: true}
	tb.Cleanup(tr.CloseIdleConnections)
	return &Client{url: endpoint, hc: &http.Client{Transport: tr, Timeout: 30 * time.Second}}
}

// Post sends a tools/list with bearer and returns the answer's status (0
// if it failed) and how long the answer took, body included.
func (c *Client) Post(bearer string) (int, time.Duration) {
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, c.url, strings.NewReader(listTools))
	if err != nil {
		return 0, 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+bearer)
	start := time.Now()
	resp, err := c.hc.Do(req)
	if err != nil {
		return 0, time.Since(start)
	}
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	return resp.StatusCode, time.Since(start)
}

// Send posts n requests from workers goroutines, the i-th with
// token(i), and returns how many answers had each status (0: the
// request failed).
func (c *Client) Send(n, workers int, token func(i int) string) map[int]int {
	var next atomic.Int64
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			mine := map[int]int{}
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				s, _ := c.Post(token(i))
				mine[s]++
			}
			mu.Lock()
			for s, k := range mine {
				statuses[s] += k
			}
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses
}

// Latencies posts requests with bearer one after another, at least min
// of them and then until done is closed (nil: min of them), and returns
// each one's latency and how many were not answered 200.
func (c *Client) Latencies(bearer string, min int, done <-chan struct{}) (ds []time.Duration, failed int) {
	for i := 0; ; i++ {
		if i >= min {
			if done == nil {
				return ds, failed
			}
			select {
			case <-done:
				return ds, failed
			default:
			}
		}
		s, d := c.Post(bearer)
		if s != http.StatusOK {
			failed++
		}
		ds = append(ds, d)
	}
}

// During runs work while it posts requests with bearer one after
// another (at least min of them), and returns their latencies and how
// many were not answered 200: a valid caller's experience of a flood.
func (c *Client) During(bearer string, min int, work func()) (ds []time.Duration, failed int) {
	done := make(chan struct{})
	measured := make(chan struct{})
	go func() {
		defer close(measured)
		ds, failed = c.Latencies(bearer, min, done)
	}()
	work()
	close(done)
	<-measured
	return ds, failed
}

// Percentile returns the p-th percentile (0 < p ≤ 100) of ds, 0 if ds is
// empty.
func Percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s))*p/100+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}
