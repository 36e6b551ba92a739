package redisstore

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// MaxCancellationBytes bounds a message of [Cancellations] on the wire:
// Publish refuses a larger one, and a larger one received is dropped
// before it is parsed. A caller digest and an id of the most bytes
// server.Cancellations carry (256) fit.
const MaxCancellationBytes = 512

// The subscription's bounds: how long it waits for a message before it
// pings Redis (a connection that answers neither is replaced), and how
// long it waits between attempts while Redis is down.
const (
	cancelHealthEvery = 15 * time.Second
	cancelRetryMin    = 100 * time.Millisecond
	cancelRetryMax    = 2 * time.Second
)

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
	logger  *slog.Logger

	mu     sync.Mutex
	subs   map[*func(string, json.RawMessage)]struct{}
	ps     *redis.PubSub // the current subscription, or nil
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the subscription's loop returned
	down   atomic.Bool   // the subscription failed, and has not come back
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
	ctx, cancel := context.WithCancel(context.Background())
	c := &Cancellations{
		rdb:     rdb,
		channel: opts.prefix() + "cancelled",
		origin:  hex.EncodeToString(tag[:]),
		logger:  logger,
		subs:    map[*func(string, json.RawMessage)]struct{}{},
		ctx:     ctx,
		cancel:  cancel,
		done:    make(chan struct{}),
	}
	go c.run()
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
	p := &deliver
	c.mu.Lock()
	c.subs[p] = struct{}{}
	c.mu.Unlock()
	return func() {
		c.mu.Lock()
		delete(c.subs, p)
		c.mu.Unlock()
	}
}

// Close ends the subscription and waits for its goroutine. Publish still
// works after Close (the client is the caller's to close).
func (c *Cancellations) Close() error {
	c.mu.Lock()
	c.closed = true
	ps := c.ps
	c.mu.Unlock()
	c.cancel()
	if ps != nil {
		ps.Close() // unblocks its read
	}
	<-c.done
	return nil
}

// run subscribes, and subscribes again whenever the subscription fails,
// until Close.
func (c *Cancellations) run() {
	defer close(c.done)
	wait := cancelRetryMin
	for {
		c.mu.Lock()
		if c.closed {
			c.mu.Unlock()
			return
		}
		ps := c.rdb.Subscribe(c.ctx, c.channel)
		c.ps = ps
		c.mu.Unlock()
		subscribed, err := c.receive(ps)
		ps.Close()
		if c.ctx.Err() != nil {
			return
		}
		if subscribed {
			wait = cancelRetryMin
		}
		if !c.down.Swap(true) {
			c.logger.Warn("redisstore: the subscription to cancellations from other replicas failed; retrying, and cancelling in this process only meanwhile", slog.String("channel", c.channel), slog.Any("error", err))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-c.ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, cancelRetryMax)
	}
}

// receive delivers ps's messages until it fails, and reports whether it
// was subscribed first.
func (c *Cancellations) receive(ps *redis.PubSub) (subscribed bool, _ error) {
	pinged := false
	for {
		m, err := ps.ReceiveTimeout(c.ctx, cancelHealthEvery)
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || pinged {
				return subscribed, err
			}
			// Quiet for a while: Redis must answer a ping in time.
			if err := ps.Ping(c.ctx); err != nil {
				return subscribed, err
			}
			pinged = true
			continue
		}
		pinged = false
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == c.channel {
				subscribed = true
				if c.down.Swap(false) {
					c.logger.Info("redisstore: subscribed to cancellations from other replicas again", slog.String("channel", c.channel))
				}
			}
		case *redis.Message:
			c.deliver(m.Payload)
		}
	}
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
	c.mu.Lock()
	subs := make([]func(string, json.RawMessage), 0, len(c.subs))
	for p := range c.subs {
		subs = append(subs, *p)
	}
	c.mu.Unlock()
	for _, d := range subs {
		d(m.Caller, m.ID)
	}
}
