// Command load measures tools/call throughput and latency over stateless
// HTTP (MCP 2025-11-25, or with -protocol 2026-07-28 that version, whose
// calls name their tool in the Mcp-Name header) at several levels of concurrent clients, for
// toolroute (server.New behind its HTTPServer: bearer tokens, an
// authz.Policy, the call log and deadline, as example-service serves)
// on its own stateless transport ("toolroute") and on go-sdk's handler
// (server.HTTPOptions.SDKTransport: "tr-sdk"),
// a raw go-sdk server and a mark3labs/mcp-go server of the same tool, on
// loopback in one process. At each level the servers take turns in short
// rounds, so that all see the same machine load. Every run is bounded in
// time and calls.
//
//	go run ./cmd/load [-levels 1,8,64,256] [-round 250ms] [-rounds 20] [-protocol 2025-11-25]
//
// The default protocol stays 2025-11-25, which every server here serves,
// so that figures compare with earlier runs; with 2026-07-28 the
// mcp-go server, which does not serve it, is left out.
package main

import (
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/toolroute/toolroute/bench"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

func main() {
	levels := flag.String("levels", "1,8,64,256", "concurrent clients, comma-separated")
	round := flag.Duration("round", 250*time.Millisecond, "length of one server's turn")
	rounds := flag.Int("rounds", 20, "turns of each server at each level")
	maxCalls := flag.Int("max-calls", 200000, "calls at most in one turn")
	protocol := flag.String("protocol", benchtools.Version, "MCP protocol version of the calls: "+benchtools.Version+" or "+benchtools.NewVersion)
	flag.Parse()
	if *protocol != benchtools.Version && *protocol != benchtools.NewVersion {
		fmt.Fprintf(os.Stderr, "load: -protocol is %s or %s\n", benchtools.Version, benchtools.NewVersion)
		os.Exit(2)
	}
	if *round > 5*time.Second || *rounds > 20 {
		fmt.Fprintln(os.Stderr, "load: -round is at most 5s and -rounds at most 20 (runs stay bounded)")
		os.Exit(2)
	}
	const tools = 10
	raw := httptest.NewServer(benchtools.RawHTTP(benchtools.Raw(tools, nil)))
	defer raw.Close()
	tr := httptest.NewServer(benchtools.ToolrouteHTTP(benchtools.Toolroute(tools)))
	defer tr.Close()
	trSDK := httptest.NewServer(benchtools.ToolrouteSDKHTTP(benchtools.Toolroute(tools)))
	defer trSDK.Close()
	mg := httptest.NewServer(bench.MCPGo(tools))
	defer mg.Close()
	targets := []bench.Target{
		{Name: "raw", URL: raw.URL + "/mcp"},
		{Name: "toolroute", URL: tr.URL + "/mcp", Token: benchtools.Token},
		{Name: "tr-sdk", URL: trSDK.URL + "/mcp", Token: benchtools.Token},
		{Name: "mcpgo", URL: mg.URL + "/mcp"},
	}
	body, header := benchtools.Call(benchtools.Name(3), *protocol)
	if header != nil {
		targets = targets[:len(targets)-1] // mcp-go serves no 2026-07-28
	}
	for i := range targets {
		targets[i].Header = header
	}

	fmt.Printf("%-8s %-10s %10s %10s %10s %8s\n", "clients", "server", "calls/s", "p50", "p99", "vs raw")
	for _, f := range strings.Split(*levels, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 1024 {
			fmt.Fprintf(os.Stderr, "load: bad level %q (1 to 1024 clients)\n", f)
			os.Exit(2)
		}
		hc := bench.LoadClient(n)
		// Warm the connections and the servers.
		for _, tg := range targets {
			if _, err := bench.Load(hc, tg, body, n, *round, 4*n); err != nil {
				fail(tg, err)
			}
		}
		stats := make([]bench.Stats, len(targets))
		for r := range *rounds {
			for k := range targets {
				i := (k + r) % len(targets) // rotate who goes first
				st, err := bench.Load(hc, targets[i], body, n, *round, *maxCalls)
				if err != nil {
					fail(targets[i], err)
				}
				stats[i].Add(st)
			}
		}
		hc.CloseIdleConnections()
		for i, tg := range targets {
			fmt.Printf("%-8d %-10s %10.0f %10s %10s %8.3f\n", n, tg.Name, stats[i].PerSecond(),
				stats[i].Quantile(0.50).Round(time.Microsecond), stats[i].Quantile(0.99).Round(time.Microsecond),
				stats[i].PerSecond()/stats[0].PerSecond())
		}
	}
}

func fail(tg bench.Target, err error) {
	fmt.Fprintf(os.Stderr, "load: %s: %v\n", tg.Name, err)
	os.Exit(1)
}
