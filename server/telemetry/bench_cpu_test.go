//go:build unix

package telemetry_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCallCPU alternates blocks of 20 tools/call with telemetry off
// and on, and reports the process CPU time each costs per call and their
// ratio. On a shared, loaded machine CPU time tells the work a call
// costs better than wall time, which waits for other processes.
func BenchmarkCallCPU(b *testing.B) {
	up := newUpstream(b)
	for _, name := range []string{"get_item", "whoami"} {
		b.Run(name, func(b *testing.B) {
			off, on, params := benchPair(b, up, name)
			ctx := context.Background()
			const block = 20
			run := func(cs *mcp.ClientSession) time.Duration {
				start := cpuTime()
				for range block {
					if res, err := cs.CallTool(ctx, params); err != nil || res.IsError {
						b.Fatalf("call: %v %+v", err, res)
					}
				}
				return cpuTime() - start
			}
			var offCPU, onCPU time.Duration
			calls := 0
			for b.Loop() {
				if calls%2 == 0 {
					offCPU += run(off)
					onCPU += run(on)
				} else {
					onCPU += run(on)
					offCPU += run(off)
				}
				calls++
			}
			n := float64(calls * block)
			b.ReportMetric(float64(offCPU.Nanoseconds())/n, "off-cpu-ns/call")
			b.ReportMetric(float64(onCPU.Nanoseconds())/n, "on-cpu-ns/call")
			b.ReportMetric(float64(onCPU)/float64(offCPU), "cpu-ratio")
		})
	}
}
