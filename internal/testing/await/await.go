// Package await bounds a test's waits: a wait that does not end fails
// the test, saying what did not arrive, instead of hanging until go
// test's -timeout kills the whole binary with a goroutine dump and no
// message. (t.Context is no bound: it ends only after the test returns.)
package await

import (
	"fmt"
	"testing"
	"time"
)

// Timeout is how long [Recv] waits: long for a test on a loaded
// machine, short next to go test's default -timeout.
const Timeout = 10 * time.Second

// Recv returns the next value received from ch, or the zero value once
// ch is closed. If nothing arrives within [Timeout], it fails tb with
// Fatalf: "WHAT did not arrive within 10s", WHAT being what formatted
// with args. Call it from the test's goroutine.
func Recv[T any](tb testing.TB, ch <-chan T, what string, args ...any) T {
	tb.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(Timeout):
		tb.Fatalf("%s did not arrive within %v", fmt.Sprintf(what, args...), Timeout)
		panic("unreachable")
	}
}
