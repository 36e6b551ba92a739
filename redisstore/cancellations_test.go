package redisstore_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/server"
)

var _ server.Cancellations = (*redisstore.Cancellations)(nil)

// inbox collects the cancellations a subscriber is delivered.
type inbox struct {
	mu  sync.Mutex
	got []string // caller + " " + id
}

func (b *inbox) deliver(caller string, id json.RawMessage) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got = append(b.got, caller+" "+string(id))
}

func (b *inbox) list() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.got...)
}

// waitSubscribers waits until channel has n subscribers on Redis.
func waitSubscribers(t *testing.T, rdb *redis.Client, channel string, n int64) {
	t.Helper()
	for range 500 {
		if m, err := rdb.PubSubNumSub(context.Background(), channel).Result(); err == nil && m[channel] == n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("channel %s never had %d subscribers", channel, n)
}

// waitGot waits until b holds want (in order), and checks it holds no
// more.
func waitGot(t *testing.T, b *inbox, want ...string) {
	t.Helper()
	for range 500 {
		if len(b.list()) >= len(want) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if got := b.list(); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("delivered %q, want %q", got, want)
	}
}

var (
	alice = strings.Repeat("a1", 32)
	bob   = strings.Repeat("b2", 32)
)

// TestCancellations: what one Cancellations publishes reaches the
// subscribers of the others with its prefix, and not its own, nor those
// of another prefix; ids are JSON strings and numbers; a message too big
// or malformed is refused or dropped.
func TestCancellations(t *testing.T) {
	srv := redistest.Start(t)
	rdb := client(t, srv)
	opts := &redisstore.Options{Prefix: "svc:"}
	a := redisstore.NewCancellations(client(t, srv), opts)
	b := redisstore.NewCancellations(client(t, srv), opts)
	other := redisstore.NewCancellations(client(t, srv), &redisstore.Options{Prefix: "other:"})
	for _, c := range []*redisstore.Cancellations{a, b, other} {
		t.Cleanup(func() { c.Close() })
	}
	var atA, atB, atOther, atB2 inbox
	a.Subscribe(atA.deliver)
	b.Subscribe(atB.deliver)
	stopB2 := b.Subscribe(atB2.deliver)
	other.Subscribe(atOther.deliver)
	waitSubscribers(t, rdb, "svc:cancelled", 2)
	waitSubscribers(t, rdb, "other:cancelled", 1)

	ctx := context.Background()
	if err := a.Publish(ctx, alice, json.RawMessage(`"c-5"`)); err != nil {
		t.Fatal(err)
	}
	if err := a.Publish(ctx, bob, json.RawMessage(`7`)); err != nil {
		t.Fatal(err)
	}
	waitGot(t, &atB, alice+` "c-5"`, bob+` 7`)
	waitGot(t, &atB2, alice+` "c-5"`, bob+` 7`)

	// Too big to publish; too big, malformed or incomplete when
	// received: dropped. A valid message after them arrives alone.
	if err := a.Publish(ctx, alice, json.RawMessage(`"`+strings.Repeat("x", redisstore.MaxCancellationBytes)+`"`)); err == nil {
		t.Error("a cancellation larger than MaxCancellationBytes was published")
	}
	for _, raw := range []string{
		`{"o":"x","c":"` + alice + `","i":"` + strings.Repeat("x", redisstore.MaxCancellationBytes) + `"}`,
		`not json`,
		`{"o":"x","c":"` + alice + `"}`,
		`{"o":"x","i":1}`,
	} {
		if err := rdb.Publish(ctx, "svc:cancelled", raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	stopB2()
	if err := b.Publish(ctx, alice, json.RawMessage(`-1.5`)); err != nil {
		t.Fatal(err)
	}
	waitGot(t, &atA, alice+` -1.5`)
	time.Sleep(100 * time.Millisecond) // b's own message must not come back to it
	waitGot(t, &atB, alice+` "c-5"`, bob+` 7`)
	waitGot(t, &atB2, alice+` "c-5"`, bob+` 7`)
	waitGot(t, &atOther)

	// Close ends the subscription.
	a.Close()
	waitSubscribers(t, rdb, "svc:cancelled", 1)
}

// TestCancellationsOutage: while Redis is down Publish fails at once and
// the outage is logged once; once Redis is back the subscription comes
// back by itself, logged once, and cancellations flow again.
func TestCancellationsOutage(t *testing.T) {
	srv := redistest.Start(t)
	var logs syncbuf.Buffer
	opts := &redisstore.Options{Prefix: "svc:", Logger: slog.New(slog.NewTextHandler(&logs, nil))}
	a := redisstore.NewCancellations(client(t, srv), opts)
	b := redisstore.NewCancellations(client(t, srv), opts)
	t.Cleanup(func() { a.Close(); b.Close() })
	var atB inbox
	b.Subscribe(atB.deliver)
	waitSubscribers(t, client(t, srv), "svc:cancelled", 2)

	srv.Stop()
	ctx := context.Background()
	start := time.Now()
	if err := a.Publish(ctx, alice, json.RawMessage(`1`)); err == nil {
		t.Error("Publish succeeded with Redis stopped")
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("Publish took %v with Redis stopped", took)
	}
	waitLog(t, &logs, "subscription to cancellations from other replicas failed", 2)
	time.Sleep(500 * time.Millisecond)                       // several retries
	if n := strings.Count(logs.String(), "failed"); n != 2 { // a's and b's
		t.Errorf("the outage logged %d times, want once per Cancellations:\n%s", n, logs.String())
	}

	srv.Restart()
	waitLog(t, &logs, "subscribed to cancellations from other replicas again", 2)
	waitSubscribers(t, client(t, srv), "svc:cancelled", 2)
	if err := a.Publish(ctx, alice, json.RawMessage(`2`)); err != nil {
		t.Fatal(err)
	}
	waitGot(t, &atB, alice+` 2`)
}

// waitLog waits until logs holds msg n times.
func waitLog(t *testing.T, logs *syncbuf.Buffer, msg string, n int) {
	t.Helper()
	for range 1000 {
		if strings.Count(logs.String(), msg) >= n {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the log never said %q %d times:\n%s", msg, n, logs.String())
}
