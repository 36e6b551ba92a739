// Command rawserve is the raw go-sdk server the start-up benchmark
// (cmd/startup) compares example-service with: n tools of the benchmarks'
// definitions and schemas (internal/testing/benchtools), served over stateless
// streamable HTTP at /mcp, with a /readyz that answers 200 as soon as the
// server listens. It prints "serving http://ADDR/mcp" on stderr.
//
//	go run ./cmd/rawserve [-addr 127.0.0.1:0] [-tools 7]
package main

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	tools := flag.Int("tools", 7, "tools to serve (example-service has 7)")
	flag.Parse()
	mux := http.NewServeMux()
	mux.Handle("/mcp", benchtools.RawHTTP(benchtools.Raw(*tools, nil)))
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ready") })
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "rawserve:", err)
		os.Exit(1)
	}
	fmt.Fprintf(os.Stderr, "serving http://%s/mcp\n", ln.Addr())
	if err := http.Serve(ln, mux); err != nil {
		fmt.Fprintln(os.Stderr, "rawserve:", err)
		os.Exit(1)
	}
}
