package await_test

import (
	"testing"

	"github.com/toolroute/toolroute/internal/testing/await"
)

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if got := await.Recv(t, ch, "a value"); got != 7 {
		t.Fatalf("Recv = %d, want 7", got)
	}
	close(ch)
	if got := await.Recv(t, ch, "the close"); got != 0 {
		t.Fatalf("Recv after close = %d, want 0", got)
	}
}
