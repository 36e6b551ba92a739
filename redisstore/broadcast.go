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

// MaxBroadcastBytes bounds a message of [Broadcast] on the wire, its
// envelope included: Publish refuses a larger one, and a larger one
// received is dropped before it is parsed.
const MaxBroadcastBytes = 4096

// Broadcast sends small messages from one replica to every other
// replica on Redis pub/sub, through the channel Options.Prefix + name:
// the kit announces a policy reload with it, so that every replica reads
// its files again. A message is JSON: the sender's random tag (a
// Broadcast is not delivered its own messages) and the payload, a JSON
// value.
//
// Delivery is at most once, to the replicas subscribed at the time, as
// pub/sub keeps nothing: a replica that was down, or whose subscription
// was failing, misses the message, and must have another way to catch
// up (the kit polls its files). While Redis is down, Publish fails and
// the subscription retries (every 100 ms, up to every 2 s), logging the
// outage once and the recovery once.
//
// It must be created with [NewBroadcast].
type Broadcast struct {
	rdb     redis.UniversalClient
	channel string
	origin  string
	sub     subscription

	subs subscribers[func(json.RawMessage)]
}

// broadcast is a message of [Broadcast].
type broadcast struct {
	Origin  string          `json:"o"`
	Payload json.RawMessage `json:"p"`
}

// NewBroadcast returns a Broadcast on rdb's channel Options.Prefix +
// name, subscribed in the background until Close. what names its
// messages in the log when the subscription fails ("policy reloads").
// It panics if rdb is nil or name is empty.
func NewBroadcast(rdb redis.UniversalClient, name, what string, opts Options) *Broadcast {
	switch {
	case rdb == nil:
		panic("redisstore: NewBroadcast: nil client")
	case name == "":
		panic("redisstore: NewBroadcast: empty channel name")
	}
	var tag [8]byte
	rand.Read(tag[:])
	logger := slog.Default()
	if opts.Logger != nil {
		logger = opts.Logger
	}
	b := &Broadcast{
		rdb:     rdb,
		channel: opts.prefix() + name,
		origin:  hex.EncodeToString(tag[:]),
	}
	b.sub = subscription{rdb: rdb, channel: b.channel, logger: logger, what: what, meanwhile: "missing them", deliver: b.deliver}
	b.sub.subscribe()
	return b
}

// Publish sends payload, a JSON value, to the other replicas. It fails
// if payload is not JSON, if the message would exceed
// MaxBroadcastBytes, or if Redis does not take it.
func (b *Broadcast) Publish(ctx context.Context, payload json.RawMessage) error {
	msg, err := json.Marshal(broadcast{Origin: b.origin, Payload: payload})
	if err != nil {
		return fmt.Errorf("redisstore: a message on %s: %w", b.channel, err)
	}
	if len(msg) > MaxBroadcastBytes {
		return fmt.Errorf("redisstore: a message of %d bytes on %s exceeds %d", len(msg), b.channel, MaxBroadcastBytes)
	}
	if err := b.rdb.Publish(ctx, b.channel, msg).Err(); err != nil {
		return fmt.Errorf("redisstore: publishing on %s: %w", b.channel, err)
	}
	return nil
}

// Subscribe has deliver called, on the subscription's goroutine, with
// the payload of every message another Broadcast publishes on the same
// channel, until stop is called. deliver must not block for long: the
// next messages wait for it.
func (b *Broadcast) Subscribe(deliver func(payload json.RawMessage)) (stop func()) {
	return b.subs.add(deliver)
}

// Close ends the subscription and waits for its goroutine. Publish still
// works after Close (the client is the caller's to close).
func (b *Broadcast) Close() error {
	b.sub.close()
	return nil
}

// deliver hands a message of another Broadcast to the subscribers; an
// oversized or malformed one, or one of this Broadcast, is dropped.
func (b *Broadcast) deliver(payload string) {
	if len(payload) > MaxBroadcastBytes {
		return
	}
	var m broadcast
	if json.Unmarshal([]byte(payload), &m) != nil || m.Origin == b.origin || len(m.Payload) == 0 {
		return
	}
	for _, d := range b.subs.list() {
		d(m.Payload)
	}
}
