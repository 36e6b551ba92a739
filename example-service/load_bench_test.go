package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The load BenchmarkLoad puts on example-service.
const (
	loadCallers        = 1000 // concurrent callers
	loadCallsPerCaller = 3
	loadSilentConns    = 3000 // connections that send headers and no body
)

// BenchmarkLoad runs example-service (built, as its own process, on
// 127.0.0.1) and loads it over real loopback HTTP: 1,000 concurrent
// callers making get_item calls (through the embedded catalog upstream),
// then 3,000 connections that announce a body and never send it, half
// with a valid token. It reports the calls' p50 and p99 latency and
// errors, the service's RSS and open fds before, under and after the
// load, and how long the server took to close the silent connections (its
// body timeout, 10 s by default). One iteration takes about 15 s: run it
// with -benchtime=1x.
//
//	go test -run '^$' -bench BenchmarkLoad -benchtime=1x ./example-service
func BenchmarkLoad(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "example-service")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	for range b.N {
		loadOnce(b, bin)
	}
}

func loadOnce(b *testing.B, bin string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}()
	url := serviceURL(b, stderr)
	pid := cmd.Process.Pid

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: loadCallers, MaxConnsPerHost: 0}}
	if _, err := loadCall(client, url, 0); err != nil {
		b.Fatalf("warm-up call: %v", err)
	}
	rssBefore, fdsBefore := procStats(b, pid)

	// 1,000 concurrent callers.
	var (
		mu        sync.Mutex
		latencies []time.Duration
		errs      atomic.Int64
		firstErr  atomic.Value
		wg        sync.WaitGroup
		startLine = make(chan struct{})
	)
	for i := range loadCallers {
		wg.Go(func() {
			<-startLine
			for j := range loadCallsPerCaller {
				d, err := loadCall(client, url, i*loadCallsPerCaller+j+1)
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				mu.Lock()
				latencies = append(latencies, d)
				mu.Unlock()
			}
		})
	}
	began := time.Now()
	close(startLine)
	wg.Wait()
	elapsed := time.Since(began)
	client.CloseIdleConnections()
	rssCalls, fdsCalls := procStats(b, pid)
	slices.Sort(latencies)
	pct := func(p float64) time.Duration {
		if len(latencies) == 0 {
			return 0
		}
		return latencies[min(len(latencies)-1, int(float64(len(latencies))*p))]
	}

	// 3,000 silent-body connections, half with a valid token.
	addr := strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://")
	conns := make([]net.Conn, 0, loadSilentConns)
	var dialErrs int
	for i := range loadSilentConns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			dialErrs++
			continue
		}
		auth := ""
		if i%2 == 0 {
			auth = "Authorization: Bearer demo-viewer\r\n"
		}
		fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n%sContent-Length: 1000\r\n\r\n", addr, auth)
		conns = append(conns, c)
	}
	silentStart := time.Now()
	time.Sleep(time.Second)
	rssHeld, fdsHeld := procStats(b, pid)
	var closedBy atomic.Int64 // nanoseconds after silentStart of the last close
	var open atomic.Int64
	var cwg sync.WaitGroup
	for _, c := range conns {
		cwg.Go(func() {
			defer c.Close()
			c.SetReadDeadline(time.Now().Add(60 * time.Second))
			if _, err := io.Copy(io.Discard, c); err != nil {
				open.Add(1) // still open at our own deadline
				return
			}
			d := int64(time.Since(silentStart))
			for {
				old := closedBy.Load()
				if d <= old || closedBy.CompareAndSwap(old, d) {
					break
				}
			}
		})
	}
	cwg.Wait()
	time.Sleep(500 * time.Millisecond)
	rssAfter, fdsAfter := procStats(b, pid)

	b.ReportMetric(float64(pct(0.50).Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(pct(0.99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(errs.Load()), "call-errors")
	b.Logf("%d callers x %d get_item calls in %v (%.0f calls/s): p50 %v, p99 %v, max %v, %d errors (first: %v)",
		loadCallers, loadCallsPerCaller, elapsed.Round(time.Millisecond), float64(len(latencies))/elapsed.Seconds(),
		pct(0.50).Round(time.Microsecond), pct(0.99).Round(time.Microsecond), pct(1).Round(time.Microsecond), errs.Load(), firstErr.Load())
	b.Logf("%d silent-body connections (%d dial errors): held 1s: service RSS %.1f MB, %d fds; all closed by the server within %v, %d still open at 60s",
		len(conns), dialErrs, mb(rssHeld), fdsHeld, time.Duration(closedBy.Load()).Round(time.Millisecond), open.Load())
	b.Logf("service RSS: before %.1f MB, after the calls %.1f MB, after the silent connections %.1f MB; fds: before %d, after the calls %d, after %d",
		mb(rssBefore), mb(rssCalls), mb(rssAfter), fdsBefore, fdsCalls, fdsAfter)
}

func mb(kb int64) float64 { return float64(kb) / 1024 }

// serviceURL reads the service's standard error until it announces its
// MCP endpoint, and then drains it in the background.
func serviceURL(b *testing.B, stderr io.Reader) string {
	re := regexp.MustCompile(`serving MCP at (http://\S+)`)
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			go io.Copy(io.Discard, stderr)
			return m[1]
		}
	}
	b.Fatal("example-service never announced its endpoint")
	return ""
}

// loadCall makes one stateless get_item call as the demo viewer, and
// returns how long it took.
func loadCall(c *http.Client, url string, id int) (time.Duration, error) {
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"get_item","arguments":{"id":"itm-1"}}}`, id)
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer demo-viewer")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	switch {
	case err != nil:
		return 0, err
	case resp.StatusCode != http.StatusOK:
		return 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, data)
	case !strings.Contains(string(data), `"result"`) || strings.Contains(string(data), `"isError":true`):
		return 0, fmt.Errorf("not a result: %.200s", data)
	}
	return d, nil
}

// procStats returns the RSS (kB) and the open fds of process pid.
func procStats(b *testing.B, pid int) (rssKB int64, fds int) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			rssKB, _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		}
	}
	entries, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		b.Fatal(err)
	}
	return rssKB, len(entries)
}
