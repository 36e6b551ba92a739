package syncbuf_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/toolroute/toolroute/internal/testing/syncbuf"
)

// TestConcurrentWrites: writes from many goroutines, read meanwhile, all
// arrive whole (run with -race).
func TestConcurrentWrites(t *testing.T) {
	var b syncbuf.Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "%d-%d\n", i, j)
				_ = b.String()
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != 800 {
		t.Errorf("%d distinct lines, want 800", len(seen))
	}
}
