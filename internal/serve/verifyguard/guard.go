// Package verifyguard bounds what strangers' bearer tokens can make a
// server's token verifier cost: the requests to an identity provider's
// introspection endpoint, an RBAC proxy's batch endpoint, or any other
// dependency a verifier asks, and the goroutines and connections that
// wait on them. The server wraps every HTTP mode's verifier in a
// [Guard]. Nothing here is API.
//
// A Guard, in the order a request meets them:
//
//   - refuses a token longer than [MaxToken] bytes at once, asking no one;
//   - serves a token it saw verified in the last hour (a known token)
//     whatever else holds below: an attacker cannot lock out a caller
//     whose token already works;
//   - refuses at once a token refused in the last 10 s (negative cache,
//     by SHA-256 digest, 10,000 at most);
//   - answers 429 with Retry-After, without verifying, to a client
//     address (an IPv4 address, an IPv6 /64) past its budget of refused
//     tokens: 20 at once, one more a second; a verification of a token
//     not known here holds a unit of it while in flight (concurrent
//     requests with that token share the unit), and keeps it unless the
//     token is verified (a refusal, an outage: state for 10,000
//     addresses at most);
//   - asks the verifier once for concurrent requests with one token
//     (singleflight, by digest), unbound from any one request's end;
//   - answers 503 with Retry-After, without verifying, once 64
//     verifications of tokens not known are in flight.
//
// A valid caller that shares an attacker's address (NAT, or a proxy in
// front of the server) keeps being served with a token it already used
// here; a token new to this server (its first request, after a refresh)
// gets 429 while the address is over its limit, and a chance per second
// against the attacker's failures.
package verifyguard

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"golang.org/x/sync/singleflight"

	"github.com/toolroute/toolroute/authz"
)

// MaxToken is the longest token a Guard lets its verifier see, in bytes:
// a longer one is refused as invalid without asking anyone.
const MaxToken = 8 << 10

// The Guard's bounds.
const (
	knownTTL  = time.Hour // a verified token is known this long after its last success
	knownMax  = 10_000
	refuseTTL = 10 * time.Second // a refused token is refused again at once this long
	refuseMax = 10_000

	failureBurst = 20          // refused tokens an address may send at once
	failureEvery = time.Second // and one more per this, sustained
	addressMax   = 10_000

	maxVerifying = 64               // verifications of unknown tokens in flight
	busyRetry    = time.Second      // what Retry-After says when that is reached
	flightMax    = 30 * time.Second // a verification outlives its requests at most this long
)

// Refusal is a request the Guard answers itself, without verifying its
// token: write it with [Refusal.Write].
type Refusal struct {
	Status     int // 429 or 503
	RetryAfter time.Duration
	Text       string
}

func (r *Refusal) Error() string { return "verifyguard: " + r.Text }

// Write answers the request with r: its status, Retry-After (in whole
// seconds, at least 1) and text.
func (r *Refusal) Write(w http.ResponseWriter) {
	secs := max(1, int(math.Ceil(r.RetryAfter.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	http.Error(w, r.Text, r.Status)
}

var (
	errTooLarge = fmt.Errorf("verifyguard: the token exceeds %d bytes: %w", MaxToken, auth.ErrInvalidToken)
	errRefused  = fmt.Errorf("verifyguard: the token was refused moments ago: %w", auth.ErrInvalidToken)
	errBusy     = &Refusal{Status: http.StatusServiceUnavailable, RetryAfter: busyRetry, Text: "too many token verifications in flight; try again later"}
	errEnded    = &Refusal{Status: http.StatusServiceUnavailable, RetryAfter: busyRetry, Text: "the request ended before its token was verified"}
)

// Guard wraps a token verifier (see the package's documentation). It must
// be created with [New] and is safe for concurrent use.
type Guard struct {
	next      auth.TokenVerifier
	known     *digests
	refused   *digests
	addresses *addresses
	verifying chan struct{} // a slot per verification of an unknown token in flight
	flight    singleflight.Group
	now       func() time.Time
}

// New returns a Guard in front of next, which must not be nil.
func New(next auth.TokenVerifier) *Guard {
	if next == nil {
		panic("verifyguard: New: nil verifier")
	}
	return &Guard{
		next:      next,
		known:     newDigests(knownMax),
		refused:   newDigests(refuseMax),
		addresses: newAddresses(addressMax),
		verifying: make(chan struct{}, maxVerifying),
		now:       time.Now,
	}
}

// Verify verifies token with the Guard's verifier, unless it answers the
// request itself: an error wrapping [auth.ErrInvalidToken] for a token
// too long or refused moments ago, a *[Refusal] when r's address is over
// its failure limit, when too many verifications are in flight, or when
// ctx ends first. Any other error is the verifier's.
func (g *Guard) Verify(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
	now := g.now()
	addr := clientAddress(r)
	if len(token) > MaxToken {
		g.addresses.failed(addr, now)
		return nil, errTooLarge
	}
	key := sha256.Sum256([]byte(token))
	known := g.known.has(key, now)
	if !known {
		if g.refused.has(key, now) {
			g.addresses.failed(addr, now)
			return nil, errRefused
		}
		if wait := g.addresses.over(addr, now); wait > 0 {
			return nil, limited(wait)
		}
	}
	if testHookMissed != nil {
		testHookMissed()
	}
	ch := g.flight.DoChan(string(key[:]), func() (any, error) {
		return g.verify(ctx, token, r, key, known, addr)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		info := res.Val.(*auth.TokenInfo)
		if res.Shared {
			info = clone(info)
		}
		return info, nil
	case <-ctx.Done():
		return nil, errEnded
	}
}

// testHookMissed, if set by a test, runs when Verify has found its token
// neither refused nor its address over the limit, before it joins or
// starts a flight.
var testHookMissed func()

// limited is the answer to an address over its limit.
func limited(wait time.Duration) *Refusal {
	return &Refusal{Status: http.StatusTooManyRequests, RetryAfter: wait, Text: "too many invalid tokens from this address; try again later"}
}

// verify is one flight: it asks the verifier, unbound from the end of
// the request that started it (the others of the flight wait for it,
// and are not charged: one token costs one verification), and records
// the answer. A token not known takes a slot of the bound and a unit of
// addr's budget (addr: the address of the flight's first request), kept
// unless the token is verified.
func (g *Guard) verify(ctx context.Context, token string, r *http.Request, key [sha256.Size]byte, known bool, addr netip.Prefix) (_ *auth.TokenInfo, err error) {
	if !known {
		// A request that missed the negative cache just before the
		// previous flight of its token stored a refusal asks nothing.
		if now := g.now(); g.refused.has(key, now) {
			g.addresses.failed(addr, now)
			return nil, errRefused
		}
		select {
		case g.verifying <- struct{}{}:
			defer func() { <-g.verifying }()
		default:
			return nil, errBusy
		}
		if wait := g.addresses.admit(addr, g.now()); wait > 0 {
			return nil, limited(wait)
		}
		defer func() { g.addresses.settle(addr, err == nil, g.now()) }()
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flightMax)
	defer cancel()
	if r != nil {
		r = r.WithContext(ctx)
	}
	info, err := g.next(ctx, token, r)
	now := g.now()
	switch {
	case err == nil:
		g.known.put(key, now, knownTTL)
	case errors.Is(err, auth.ErrInvalidToken):
		g.known.remove(key)
		g.refused.put(key, now, refuseTTL)
	}
	return info, err
}

// clone copies what a request could change of a shared answer: the
// scopes, the extra map, and the roles of a caller in it.
func clone(ti *auth.TokenInfo) *auth.TokenInfo {
	c := *ti
	c.Scopes = slices.Clone(ti.Scopes)
	if ti.Extra != nil {
		c.Extra = maps.Clone(ti.Extra)
		for k, v := range c.Extra {
			if caller, ok := v.(authz.Caller); ok {
				caller.Roles = slices.Clone(caller.Roles)
				c.Extra[k] = caller
			}
		}
	}
	return &c
}

// clientAddress is the key of r's client in the failure limit: its IPv4
// address, or its IPv6 address's /64 (one host's usual share). A request
// without a parsable address (not from net/http's server) shares the
// invalid prefix with every other such request.
func clientAddress(r *http.Request) netip.Prefix {
	if r == nil {
		return netip.Prefix{}
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Prefix{}
	}
	a := ap.Addr().Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits)
	return p
}

// digests is a bounded set of token digests, each until a time of its
// own. When full, the ended entries go, then an arbitrary half.
type digests struct {
	max int
	mu  sync.Mutex
	m   map[[sha256.Size]byte]time.Time
}

func newDigests(max int) *digests {
	return &digests{max: max, m: map[[sha256.Size]byte]time.Time{}}
}

func (d *digests) has(k [sha256.Size]byte, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	until, ok := d.m[k]
	if ok && !now.Before(until) {
		delete(d.m, k)
		ok = false
	}
	return ok
}

func (d *digests) put(k [sha256.Size]byte, now time.Time, ttl time.Duration) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.m[k]; !ok && len(d.m) >= d.max {
		for k, u := range d.m {
			if !now.Before(u) {
				delete(d.m, k)
			}
		}
		for k := range d.m {
			if len(d.m) < d.max/2 {
				break
			}
			delete(d.m, k)
		}
	}
	d.m[k] = now.Add(ttl)
}

func (d *digests) remove(k [sha256.Size]byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.m, k)
}

// addresses holds a bucket of refused tokens per client address, for at
// most max addresses: when full, the addresses whose bucket is full again
// go (they have nothing to remember), then an arbitrary half. A
// verification reserves a unit of its address's bucket ([addresses.admit])
// and gives it back if its token is verified ([addresses.settle]), so
// that concurrent requests cannot all pass while one unit is left, and a
// token that works costs nothing.
type addresses struct {
	max int
	mu  sync.Mutex
	m   map[netip.Prefix]*bucket
}

// bucket is a token bucket of failureBurst units, refilled one every
// failureEvery.
type bucket struct {
	units float64
	at    time.Time // when units was counted
}

func (b *bucket) level(now time.Time) float64 {
	return min(failureBurst, b.units+float64(now.Sub(b.at))/float64(failureEvery))
}

func (b *bucket) set(units float64, now time.Time) {
	b.units, b.at = units, now
}

func newAddresses(max int) *addresses {
	return &addresses{max: max, m: map[netip.Prefix]*bucket{}}
}

// over returns how long until a's budget has a unit again, 0 if it has
// one now.
func (as *addresses) over(a netip.Prefix, now time.Time) time.Duration {
	as.mu.Lock()
	defer as.mu.Unlock()
	b := as.m[a]
	if b == nil {
		return 0
	}
	if l := b.level(now); l < 1 {
		return max(time.Millisecond, time.Duration((1-l)*float64(failureEvery)))
	}
	return 0
}

// admit reserves a unit of a's budget and returns 0, or, if a's budget is
// spent, how long until it has a unit again (reserving nothing).
func (as *addresses) admit(a netip.Prefix, now time.Time) time.Duration {
	as.mu.Lock()
	defer as.mu.Unlock()
	b := as.bucket(a, now)
	l := b.level(now)
	if l < 1 {
		return max(time.Millisecond, time.Duration((1-l)*float64(failureEvery)))
	}
	b.set(l-1, now)
	return 0
}

// settle ends a's reservation: a verified token gives its unit back;
// any other outcome keeps it (a refusal; an outage, during which a
// client's retries must not hammer the dependency). A request abandoned
// before its answer does not end the reservation: its flight does.
func (as *addresses) settle(a netip.Prefix, verified bool, now time.Time) {
	if !verified {
		return
	}
	as.mu.Lock()
	defer as.mu.Unlock()
	if b := as.m[a]; b != nil {
		b.set(min(failureBurst, b.level(now)+1), now)
	}
}

// failed charges a token refused without verifying to a, if its budget
// has a unit left.
func (as *addresses) failed(a netip.Prefix, now time.Time) {
	as.mu.Lock()
	defer as.mu.Unlock()
	b := as.bucket(a, now)
	if l := b.level(now); l >= 1 {
		b.set(l-1, now)
	}
}

// bucket returns a's bucket, making room for it if need be; as.mu is
// held.
func (as *addresses) bucket(a netip.Prefix, now time.Time) *bucket {
	b := as.m[a]
	if b == nil {
		if len(as.m) >= as.max {
			for k, b := range as.m {
				if b.level(now) >= failureBurst {
					delete(as.m, k)
				}
			}
			for k := range as.m {
				if len(as.m) < as.max/2 {
					break
				}
				delete(as.m, k)
			}
		}
		b = &bucket{units: failureBurst, at: now}
		as.m[a] = b
	}
	return b
}
