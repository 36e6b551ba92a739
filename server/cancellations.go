package server

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolroute/toolroute/internal/sdkfix/statelesscancel/rpcscan"
)

// Cancellations carries a 2025 client's notifications/cancelled between
// the replicas of a stateless service ([HTTPOptions.Cancellations]): over
// stateless HTTP the cancellation comes in a request of its own, which a
// load balancer may send to another replica than the call's.
//
// A replica that receives a cancellation for a call of the same caller in
// flight in its own process cancels it and publishes nothing; otherwise
// it publishes the cancellation, and every replica whose deliver function
// gets it cancels the caller's call with that id if it has one in flight
// (and otherwise ignores it: the call may have ended, or be on another
// replica).
//
// The caller is never a token: it is the hex SHA-256 (64 digits) of the
// caller's identity (its verified subject, or for a caller without one,
// its token's digest), the same on every replica that verifies callers
// alike. The id is the cancelled request's JSON-RPC id, as JSON: a string
// or a number, of at most 256 bytes: a cancellation of a call with a
// longer id reaches only this process's calls.
//
// Redis pub/sub implements it in
// github.com/toolroute/toolroute/redisstore.
type Cancellations interface {
	// Publish sends a cancellation to the other replicas. The server
	// calls it in the background, with a context that ends after a few
	// seconds, never while a request waits; an error is logged once
	// until a Publish succeeds again, and the cancellation then reaches
	// only this process's calls.
	Publish(ctx context.Context, caller string, id json.RawMessage) error
	// Subscribe has deliver called with every cancellation other
	// replicas publish, until stop is called. A delivery may come from
	// any goroutine; deliver returns at once. The server subscribes when
	// its handler is built ([HTTPHandler], [NewHTTPServer]); an
	// [HTTPServer] stops at the end of Shutdown, and cancels its
	// publishes still in flight then. A handler of [HTTPHandler] stays
	// subscribed: build one per Cancellations.
	Subscribe(deliver func(caller string, id json.RawMessage)) (stop func())
}

// maxCancelledIDBytes bounds the JSON of an id that [Cancellations]
// carries (their doc states it): a cancellation of a call with a longer
// id reaches only this process's calls.
const maxCancelledIDBytes = 256

// The bounds of publishing to [Cancellations]: each Publish's time, and
// how many run at once (more are dropped: the cancellation reaches this
// process only).
const (
	publishTimeout  = 3 * time.Second
	publishInFlight = 64
)

// callerDigest matches the caller of a delivered cancellation.
var callerDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// relay connects the stateless calls of one handler with the other
// replicas through a [Cancellations].
type relay struct {
	c     Cancellations
	log   *slog.Logger
	slots chan struct{} // publishes in flight
	down  atomic.Bool   // a Publish failed, and none succeeded since

	ctx    context.Context // of every Publish; ends at close
	cancel context.CancelFunc
	mu     sync.Mutex     // guards closed and wg's Add
	closed bool           // close was called: publish drops
	wg     sync.WaitGroup // publishes in flight
}

func newRelay(c Cancellations, log *slog.Logger) *relay {
	ctx, cancel := context.WithCancel(context.Background())
	return &relay{c: c, log: log, slots: make(chan struct{}, publishInFlight), ctx: ctx, cancel: cancel}
}

// close cancels the publishes in flight, waits for them to return, and
// drops any later one.
func (r *relay) close() {
	r.mu.Lock()
	r.closed = true
	r.mu.Unlock()
	r.cancel()
	r.wg.Wait()
}

// publish sends the cancellation of the caller's call id (an [rpcscan.IDKey]) in
// the background, without waiting.
func (r *relay) publish(caller callerID, id string) {
	raw, ok := idJSON(id)
	if !ok {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	select {
	case r.slots <- struct{}{}:
	default:
		if !r.down.Swap(true) {
			r.log.Warn("toolroute: cancellations for other replicas dropped: too many in flight; cancelling in this process only", slog.Int("in_flight", publishInFlight))
		}
		return
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		defer func() { <-r.slots }()
		ctx, cancel := context.WithTimeout(r.ctx, publishTimeout)
		defer cancel()
		if err := r.c.Publish(ctx, caller.String(), raw); err != nil {
			if r.ctx.Err() == nil && !r.down.Swap(true) {
				r.log.Warn("toolroute: publishing a cancellation to other replicas failed; cancelling in this process only until it works again", slog.String("error", err.Error()))
			}
			return
		}
		if r.down.Swap(false) {
			r.log.Info("toolroute: publishing cancellations to other replicas works again")
		}
	}()
}

// received turns a delivered cancellation into the key of the call it
// cancels; ok is false for a malformed one.
func received(caller string, id json.RawMessage) (k callKey, ok bool) {
	var user callerID
	if !callerDigest.MatchString(caller) || len(id) > maxCancelledIDBytes {
		return callKey{}, false
	}
	if _, err := hex.Decode(user[:], []byte(caller)); err != nil {
		return callKey{}, false
	}
	key, ok := rpcscan.IDKey(id)
	if !ok {
		return callKey{}, false
	}
	return callKey{User: user, ID: key}, true
}

// idJSON is the JSON of an [rpcscan.IDKey]'s id, or false if it is
// longer than maxCancelledIDBytes.
func idJSON(key string) (json.RawMessage, bool) {
	raw, ok := rpcscan.KeyJSON(key)
	return raw, ok && len(raw) <= maxCancelledIDBytes
}
