package resultcache_test

import (
	"context"
	"runtime"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/resultcache"
	"github.com/toolroute/toolroute/server/servertest"
)

// BenchmarkCall: a read-only tool forwarding to a loopback upstream,
// called by one caller with the same arguments, through server.New over
// in-memory transports: cached (every call after the first a hit) and
// uncached (the same tool without Cache).
func BenchmarkCall(b *testing.B) {
	for _, name := range []string{"get_thing_uncached", "get_thing_fresh_only"} {
		b.Run(map[string]string{"get_thing_uncached": "uncached", "get_thing_fresh_only": "cached"}[name], func(b *testing.B) {
			e := newEnv(b, resultcache.Options{})
			cs := servertest.Connect(b, e.srv, &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}, servertest.Options{})
			params := &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": "1"}}
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkEntryMemory: the heap an in-process entry holds, for a small
// result (whoami's, about 130 bytes of JSON), measured over 10,000
// entries stored through the middleware.
func BenchmarkEntryMemory(b *testing.B) {
	const n = 10_000
	for b.Loop() {
		e := newEnv(b, resultcache.Options{})
		cs := servertest.Connect(b, e.srv, &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}, servertest.Options{})
		ctx := context.Background()
		call := func(i int) {
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{"a": i}}); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
		call(-1) // warm up the session
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		for i := range n {
			call(i)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/entry")
	}
}
