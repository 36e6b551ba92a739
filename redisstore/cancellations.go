package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/redis/go-redis/v9"
)

// MaxCancellationBytes bounds a message of [Cancellations] on the wire:
// Publish refuses a larger one, and a larger one received is dropped
// before it is parsed. A caller digest and an id of the most bytes
// server.Cancellations carry (256) fit.
const MaxCancellationBytes = 512

// Cancellations is a server.Cancellations on Redis pub/sub: it carries a
// 2025 client's notifications/cancelled from the replica it lands on to
// the replica running the call, through one channel per prefix
// (Options.Prefix + "cancelled"). A message is JSON of at most
// [MaxCancellationBytes] bytes: the caller (a digest, never a token), the
// call's JSON-RPC id, and a random tag of the sending Cancellations, which
// is not delivered its own messages.
//
// It subscribes when created, in the background, until Close. While
// Redis is down, Publish fails (the server then cancels in its own
// process only) and the subscription retries (every 100 ms, up to every
// 2 s), logging the outage once and the recovery once; messages published
// meanwhile are lost, as pub/sub keeps none. Nothing waits for it but the
// server's background publishes, each bound by the client's timeouts.
//
// It must be created with [NewCancellations].
type Cancellations struct {
	rdb     redis.UniversalClient
	channel string
	origin  string
	sub     subscription

	subs subscribers[func(string, json.RawMessage)]
}

// cancellation is a message of [Cancellations].
type cancellation struct {
	Origin string          `json:"o"`
	Caller string          `json:"c"`
	ID     json.RawMessage `json:"i"`
}

// NewCancellations returns a Cancellations on rdb, subscribed in the
// background until Close. It panics if rdb is nil.
func NewCancellations(rdb redis.UniversalClient, opts Options) *Cancellations {
	if rdb == nil {
		panic("redisstore: NewCancellations: nil client")
	}
	var tag [8]byte
	rand.Read(tag[:])
	logger := slog.Default()
	if opts.Logger != nil {
		logger = opts.Logger
	}
	c := &Cancellations{
		rdb:     rdb,
		channel: opts.prefix() + "cancelled",
		origin:  hex.EncodeToString(tag[:]),
	}
	c.sub = subscription{rdb: rdb, channel: c.channel, logger: logger, what: "cancellations", meanwhile: "cancelling in this process only", deliver: c.deliver}
	c.sub.subscribe()
	return c
}

// Publish sends the cancellation of the caller's call id to the other
// replicas. It fails if the message would exceed MaxCancellationBytes,
// or if Redis does not take it.
func (c *Cancellations) Publish(ctx context.Context, caller string, id json.RawMessage) error {
	msg, err := json.Marshal(cancellation{Origin: c.origin, Caller: caller, ID: id})
	if err != nil {
		return fmt.Errorf("redisstore: a cancellation of id %.40q: %w", id, err)
	}
	if len(msg) > MaxCancellationBytes {
		return fmt.Errorf("redisstore: a cancellation of %d bytes exceeds %d", len(msg), MaxCancellationBytes)
	}
	if err := c.rdb.Publish(ctx, c.channel, msg).Err(); err != nil {
		return fmt.Errorf("redisstore: publishing a cancellation: %w", err)
	}
	return nil
}

// Subscribe has deliver called, on the subscription's goroutine, with
// every cancellation another Cancellations publishes on the same
// channel, until stop is called.
func (c *Cancellations) Subscribe(deliver func(caller string, id json.RawMessage)) (stop func()) {
	return c.subs.add(deliver)
}

// Close ends the subscription and waits for its goroutine. Publish still
// works after Close (the client is the caller's to close).
func (c *Cancellations) Close() error {
	c.sub.close()
	return nil
}

// deliver hands a message from another Cancellations to the subscribers;
// an oversized or malformed one, or one of this Cancellations, is
// dropped.
func (c *Cancellations) deliver(payload string) {
	if len(payload) > MaxCancellationBytes {
		return
	}
	var m cancellation
	if json.Unmarshal([]byte(payload), &m) != nil || m.Origin == c.origin || m.Caller == "" || len(m.ID) == 0 {
		return
	}
	for _, d := range c.subs.list() {
		d(m.Caller, m.ID)
	}
}
