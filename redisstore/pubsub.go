package redisstore

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// The subscriptions' bounds: how long one waits for a message before it
// pings Redis (a connection that answers neither is replaced), and how
// long it waits between attempts while Redis is down.
const (
	subscribeHealthEvery = 15 * time.Second
	subscribeRetryMin    = 100 * time.Millisecond
	subscribeRetryMax    = 2 * time.Second
)

// subscription is one channel's subscription, kept in the background
// until close: subscribed again whenever it fails (every 100 ms, up to
// every 2 s, while Redis is down), the failure logged once and the
// return once. [Cancellations] and [Broadcast] receive through one.
type subscription struct {
	rdb     redis.UniversalClient
	channel string
	logger  *slog.Logger
	// what names the messages in the log ("cancellations"), meanwhile
	// what the replica does without them.
	what, meanwhile string
	deliver         func(payload string)

	mu     sync.Mutex
	ps     *redis.PubSub // the current subscription, or nil
	closed bool

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{} // closed when the loop returned
	down   atomic.Bool   // the subscription failed, and has not come back
}

// subscribe starts s's loop; s's exported fields are set.
func (s *subscription) subscribe() {
	s.ctx, s.cancel = context.WithCancel(context.Background())
	s.done = make(chan struct{})
	go s.run()
}

// close ends the subscription and waits for its goroutine.
func (s *subscription) close() {
	s.mu.Lock()
	s.closed = true
	ps := s.ps
	s.mu.Unlock()
	s.cancel()
	if ps != nil {
		ps.Close() // unblocks its read
	}
	<-s.done
}

// run subscribes, and subscribes again whenever the subscription fails,
// until close.
func (s *subscription) run() {
	defer close(s.done)
	wait := subscribeRetryMin
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		ps := s.rdb.Subscribe(s.ctx, s.channel)
		s.ps = ps
		s.mu.Unlock()
		subscribed, err := s.receive(ps)
		ps.Close()
		if s.ctx.Err() != nil {
			return
		}
		if subscribed {
			wait = subscribeRetryMin
		}
		if !s.down.Swap(true) {
			s.logger.Warn("redisstore: the subscription to "+s.what+" from other replicas failed; retrying, and "+s.meanwhile+" meanwhile", slog.String("channel", s.channel), slog.Any("error", err))
		}
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-s.ctx.Done():
			t.Stop()
			return
		}
		wait = min(2*wait, subscribeRetryMax)
	}
}

// receive delivers ps's messages until it fails, and reports whether it
// was subscribed first.
func (s *subscription) receive(ps *redis.PubSub) (subscribed bool, _ error) {
	pinged := false
	for {
		m, err := ps.ReceiveTimeout(s.ctx, subscribeHealthEvery)
		if err != nil {
			var ne net.Error
			if !errors.As(err, &ne) || !ne.Timeout() || pinged {
				return subscribed, err
			}
			// Quiet for a while: Redis must answer a ping in time.
			if err := ps.Ping(s.ctx); err != nil {
				return subscribed, err
			}
			pinged = true
			continue
		}
		pinged = false
		switch m := m.(type) {
		case *redis.Subscription:
			if m.Kind == "subscribe" && m.Channel == s.channel {
				subscribed = true
				if s.down.Swap(false) {
					s.logger.Info("redisstore: subscribed to "+s.what+" from other replicas again", slog.String("channel", s.channel))
				}
			}
		case *redis.Message:
			s.deliver(m.Payload)
		}
	}
}

// subscribers is the set of functions a [Cancellations] or a
// [Broadcast] delivers its messages to. The zero value is empty and
// ready; it is safe for concurrent use.
type subscribers[F any] struct {
	mu   sync.Mutex
	subs map[*F]struct{}
}

// add puts f in the set until stop is called.
func (s *subscribers[F]) add(f F) (stop func()) {
	p := &f
	s.mu.Lock()
	if s.subs == nil {
		s.subs = map[*F]struct{}{}
	}
	s.subs[p] = struct{}{}
	s.mu.Unlock()
	return func() {
		s.mu.Lock()
		delete(s.subs, p)
		s.mu.Unlock()
	}
}

// list is the functions in the set now, so that a delivery calls them
// without holding the lock (one may stop itself).
func (s *subscribers[F]) list() []F {
	s.mu.Lock()
	defer s.mu.Unlock()
	fs := make([]F, 0, len(s.subs))
	for p := range s.subs {
		fs = append(fs, *p)
	}
	return fs
}
