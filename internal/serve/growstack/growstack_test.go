package growstack

import (
	"runtime"
	"sync"
	"testing"
)

// TestGrowGrowsTheStack parks goroutines after Grow and checks that
// their stacks, in the runtime's own accounting, are the 32 KiB Grow
// promises rather than the few KiB a goroutine starts with.
func TestGrowGrowsTheStack(t *testing.T) {
	const n = 200
	before := stackInuse(n, false)
	after := stackInuse(n, true)
	perGoroutine := (after - before) / n
	t.Logf("stack in use: %d bytes for %d goroutines without Grow, %d with (%d more each)", before, n, after, perGoroutine)
	// Each grown stack is 32 KiB; an ungrown one is at most 8 KiB, so a
	// Grow that grew nothing leaves the difference near zero.
	if perGoroutine < 16<<10 {
		t.Fatalf("Grow added %d bytes of stack per goroutine, want at least %d", perGoroutine, 16<<10)
	}
}

// stackInuse starts n goroutines that call Grow (if grow) and wait, and
// returns the process's stack memory in use while they wait.
func stackInuse(n int, grow bool) uint64 {
	var started sync.WaitGroup
	release := make(chan struct{})
	var done sync.WaitGroup
	started.Add(n)
	done.Add(n)
	for range n {
		go func() {
			defer done.Done()
			if grow {
				Grow()
			}
			started.Done()
			<-release
		}()
	}
	started.Wait()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	close(release)
	done.Wait()
	return ms.StackInuse
}

func BenchmarkGrow(b *testing.B) {
	for b.Loop() {
		Grow()
	}
}
