package inflight_test

import (
	"context"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/serve/inflight"
	"github.com/toolroute/toolroute/internal/testing/await"
)

// TestAddDoneWait: Wait returns once every entry is done, and not before.
func TestAddDoneWait(t *testing.T) {
	tr := inflight.New[int]()
	if !tr.Add(1) || !tr.Add(2) {
		t.Fatal("Add of new keys refused")
	}
	if tr.Add(1) {
		t.Error("Add of a key in flight accepted")
	}
	waited := make(chan error, 1)
	go func() { waited <- tr.Wait(context.Background()) }()
	tr.Done(1)
	select {
	case <-waited:
		t.Fatal("Wait returned with an entry in flight")
	case <-time.After(20 * time.Millisecond):
	}
	tr.Done(2)
	if err := await.Recv(t, waited, "Wait's return"); err != nil {
		t.Errorf("Wait = %v, want nil", err)
	}
	if n := tr.Len(); n != 0 {
		t.Errorf("Len = %d, want 0", n)
	}
}

// TestWaitEndsWithContext: Wait gives up with ctx's error.
func TestWaitEndsWithContext(t *testing.T) {
	tr := inflight.New[string]()
	tr.Add("x")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := tr.Wait(ctx); err != context.Canceled {
		t.Errorf("Wait = %v, want context.Canceled", err)
	}
}

// TestCloseRefusesAdds: after Close, Add and AddAll refuse; what is in
// flight stays until done.
func TestCloseRefusesAdds(t *testing.T) {
	tr := inflight.New[int]()
	tr.Add(1)
	tr.Close()
	if tr.Add(2) || tr.AddAll([]int{3}) {
		t.Error("Add after Close accepted")
	}
	if !tr.Has(1) {
		t.Error("Close dropped an entry in flight")
	}
}

// TestAddAllIsAllOrNothing: a batch with one key in flight records
// nothing.
func TestAddAllIsAllOrNothing(t *testing.T) {
	tr := inflight.New[int]()
	tr.Add(2)
	if tr.AddAll([]int{1, 2}) {
		t.Fatal("AddAll with a key in flight accepted")
	}
	if tr.Has(1) {
		t.Error("a refused AddAll recorded a key")
	}
	if !tr.AddAll([]int{1, 3}) || !tr.Has(1) || !tr.Has(3) {
		t.Error("AddAll of new keys not recorded")
	}
}

// TestCancelMarks: Cancel marks an entry in flight only; WaitCancelled
// returns once every entry is cancelled or done.
func TestCancelMarks(t *testing.T) {
	tr := inflight.New[int]()
	tr.Cancel(9) // not in flight: nothing to mark
	if tr.Add(9); tr.Cancelled(9) {
		t.Error("a cancellation before the entry marked it")
	}
	tr.Add(1)
	waited := make(chan error, 1)
	go func() { waited <- tr.WaitCancelled(context.Background()) }()
	tr.Cancel(1)
	select {
	case <-waited:
		t.Fatal("WaitCancelled returned with an entry neither cancelled nor done")
	case <-time.After(20 * time.Millisecond):
	}
	if !tr.Cancelled(1) || !tr.AnyCancelled() {
		t.Error("Cancelled(1) or AnyCancelled false after Cancel")
	}
	tr.Cancel(1) // twice: still one cancelled entry
	tr.Done(9)
	if err := await.Recv(t, waited, "Wait's return"); err != nil {
		t.Errorf("WaitCancelled = %v", err)
	}
	tr.Done(1)
	if tr.Cancelled(1) || tr.AnyCancelled() {
		t.Error("a done entry is still cancelled")
	}
}

// TestAbort: Aborted's context ends at Abort.
func TestAbort(t *testing.T) {
	tr := inflight.New[int]()
	if tr.Aborted().Err() != nil {
		t.Fatal("aborted before Abort")
	}
	tr.Abort()
	await.Recv(t, tr.Aborted().Done(), "the abort")
}
