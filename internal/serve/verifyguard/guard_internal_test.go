package verifyguard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"net/http"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Client addresses are IPv4 addresses and IPv6 /64s: a host cannot
// escape its limit by using another address of its own /64.
func TestClientAddress(t *testing.T) {
	for _, tt := range []struct{ remote, want string }{
		{"192.0.2.7:4321", "192.0.2.7/32"},
		{"[::ffff:192.0.2.7]:4321", "192.0.2.7/32"},
		{"[2001:db8:1:2:aaaa::1]:443", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:bbbb::9]:443", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:443", "fe80::/64"},
		{"not an address", "invalid Prefix"},
	} {
		got := clientAddress(&http.Request{RemoteAddr: tt.remote})
		if got.String() != tt.want {
			t.Errorf("clientAddress(%q) = %s, want %s", tt.remote, got, tt.want)
		}
	}
}

// The negative cache and the address table stay within their bounds
// whatever number of tokens and addresses comes.
func TestStateIsBounded(t *testing.T) {
	const max = 100
	now := time.Now()
	d := newDigests(max)
	as := newAddresses(max)
	for i := range 10 * max {
		var b [4]byte
		binary.BigEndian.PutUint32(b[:], uint32(i))
		d.put(sha256.Sum256(b[:]), now, time.Minute)
		as.failed(netip.PrefixFrom(netip.AddrFrom4(b), 32), now)
		if len(d.m) > max || len(as.m) > max {
			t.Fatalf("after %d: %d digests, %d addresses, want at most %d", i+1, len(d.m), len(as.m), max)
		}
	}
	// An address's budget: failureBurst at once, then none until it
	// refills.
	a := netip.MustParsePrefix("198.51.100.1/32")
	for i := range failureBurst {
		if w := as.admit(a, now); w != 0 {
			t.Fatalf("admission %d: wait %v, want none", i+1, w)
		}
	}
	if w := as.admit(a, now); w <= 0 || w > failureEvery {
		t.Errorf("past the burst: wait %v, want (0, %v]", w, failureEvery)
	}
	if w := as.admit(a, now.Add(failureEvery)); w != 0 {
		t.Errorf("a second later: wait %v, want none", w)
	}

	// Tokens that work cost nothing: 100 new valid tokens from one
	// address (a proxy in front, a NAT) are all admitted.
	ok := netip.MustParsePrefix("198.51.100.2/32")
	for i := range 100 {
		if w := as.admit(ok, now); w != 0 {
			t.Fatalf("admission %d of verified tokens: wait %v, want none", i+1, w)
		}
		as.settle(ok, true, now)
	}
}

// A client that abandons its requests before their answers is charged
// for them: else random tokens sent and dropped at once would pass the
// address's limit unbounded. 40 such requests make at most 20
// verifications.
func TestAbandonedRequestsAreCharged(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	var calls atomic.Int64
	g := New(func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		calls.Add(1)
		<-release
		return nil, auth.ErrInvalidToken
	})
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	r := &http.Request{RemoteAddr: "192.0.2.1:1234"}
	for i := range 2 * failureBurst {
		if _, err := g.Verify(gone, rand.Text(), r); err == nil {
			t.Fatalf("abandoned request %d verified", i+1)
		}
	}
	for i := 0; i < 500 && calls.Load() < failureBurst; i++ { // a bound against a hang
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // the flights past the budget have had their turn
	if n := calls.Load(); n != failureBurst {
		t.Errorf("%d abandoned requests made %d verifications, want %d (the budget)", 2*failureBurst, n, failureBurst)
	}
}

// A request that missed the negative cache just before another request's
// flight stored the refusal of its token asks the verifier nothing: one
// unknown token, however its requests interleave, costs one verification.
func TestRefusalStoredJustAfterAMiss(t *testing.T) {
	var calls atomic.Int64
	g := New(func(ctx context.Context, token string, r *http.Request) (*auth.TokenInfo, error) {
		calls.Add(1)
		return nil, auth.ErrInvalidToken
	})
	missed, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	testHookMissed = func() {
		if first.CompareAndSwap(false, true) {
			close(missed) // the late request has missed the negative cache
			<-release     // and waits until the other one's refusal is stored
		}
	}
	t.Cleanup(func() { testHookMissed = nil })
	r := &http.Request{RemoteAddr: "192.0.2.1:1234"}
	token := rand.Text()
	late := make(chan error, 1)
	go func() {
		_, err := g.Verify(context.Background(), token, r)
		late <- err
	}()
	<-missed
	if _, err := g.Verify(context.Background(), token, r); !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("Verify: %v, want an invalid token", err)
	}
	close(release)
	if err := <-late; !errors.Is(err, auth.ErrInvalidToken) {
		t.Fatalf("the late Verify: %v, want an invalid token", err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("one unknown token made %d verifications, want 1", n)
	}
}
