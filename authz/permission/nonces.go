package permission

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"
)

// A NonceStore is the replay guard of request states: every answered
// state's nonce is spent in it, and stays spent until the state expires,
// so that no answer is used twice.
//
// The default store is in memory, so its guard is per process. Replicas
// that share an [Options].Key (as stateless HTTP replicas behind a load
// balancer do) must share a NonceStore too, or an answer used on one
// replica can be used again on another: implement it on a shared store,
// for example Redis's SET key value NX PXAT (expiry plus a margin for the
// replicas' clock skew, a minute say; package redisstore does this), or
// an insert into a table whose key is the nonce. A store may keep a nonce longer than asked, never
// shorter: a state is refused once the Checker's clock passes its expiry,
// and a store whose clock is ahead would otherwise forget it too early.
type NonceStore interface {
	// Spend marks nonce (a hex string) spent until expiry. It returns an
	// error wrapping [ErrReplayed] if the nonce was spent already. Any
	// other error refuses the answer: the call fails with a
	// [*StoreError] (a tool error) and nothing is granted.
	Spend(ctx context.Context, nonce string, expiry time.Time) error
}

// ErrReplayed is what [NonceStore.Spend] returns for a nonce spent
// already.
var ErrReplayed = errors.New("permission: request state already used")

var (
	errReplayed = invalidState("already used")
	errBusy     = errors.New("permission: too many answers in flight; try again later")
)

// newNonceStore returns an in-memory NonceStore holding at most max
// unexpired nonces (max <= 0 selects 100,000). When it is full of
// unexpired nonces it refuses answers rather than forget one: fail
// closed. It forgets a nonce a minute after its expiry by the real clock
// (time.Now), so Checkers sharing it must run on the real clock (a nil
// [Options].Now). Share one between Checkers of one process; replicas
// need a shared store of their own.
func newNonceStore(max int) NonceStore {
	return newMemoryNonces(max, time.Now)
}

// nonceMargin is how long after its expiry the in-memory store keeps a
// nonce.
const nonceMargin = time.Minute

// memoryNonces is the in-memory NonceStore.
type memoryNonces struct {
	now func() time.Time

	mu  sync.Mutex
	max int
	m   map[string]int64 // nonce → expiry, Unix ms
}

func newMemoryNonces(max int, now func() time.Time) *memoryNonces {
	if max <= 0 {
		max = 100_000
	}
	return &memoryNonces{now: now, max: max, m: map[string]int64{}}
}

func (s *memoryNonces) Spend(_ context.Context, nonce string, expiry time.Time) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[nonce]; ok {
		return ErrReplayed
	}
	if len(s.m) >= s.max {
		// Expired a while ago: its state is refused anyway, by a clock
		// that may lag this one a little.
		now := s.now().Add(-nonceMargin).UnixMilli()
		for n, exp := range s.m {
			if exp <= now {
				delete(s.m, n)
			}
		}
		if len(s.m) >= s.max {
			return errBusy
		}
	}
	s.m[nonce] = expiry.UnixMilli()
	return nil
}

func (s *memoryNonces) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// spend spends a state's nonce in c's store, and maps the store's answer
// to what the call gets: a replay is a protocol error, a full in-memory
// store a tool error, any other failure a [*StoreError].
func (c *Checker) spend(ctx context.Context, p *payload) error {
	err := c.nonces.Spend(ctx, hex.EncodeToString(p.nonce[:]), time.UnixMilli(p.expiry))
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrReplayed):
		return errReplayed
	case errors.Is(err, errBusy):
		return errBusy
	default:
		return &StoreError{Err: err}
	}
}
