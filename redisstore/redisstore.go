package redisstore

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/ratelimit"
)

// Options configures the stores. A nil *Options selects the defaults.
type Options struct {
	// Prefix starts every key the stores write: services sharing one
	// Redis need prefixes of their own (tool names and subjects may
	// repeat across services). "" selects "toolroute:".
	Prefix string
	// AnswerTTL is how long [AnswerStore] keeps the answers about one
	// (principal, tool, subject), from the last one given; then the
	// question is asked again. 0 selects 30 days; a negative value keeps
	// them until deleted.
	AnswerTTL time.Duration
	// Logger receives the limiter's switches to and from its in-process
	// fallback. nil selects [slog.Default].
	Logger *slog.Logger
}

// DefaultAnswerTTL is the AnswerTTL that 0 selects.
const DefaultAnswerTTL = 30 * 24 * time.Hour

// NonceMargin is how long after a request state's expiry [NonceStore]
// keeps its nonce: the replicas' clocks may differ by up to this much.
const NonceMargin = time.Minute

func (o Options) prefix() string {
	if o.Prefix == "" {
		return "toolroute:"
	}
	return o.Prefix
}

// NonceStore is a permission.NonceStore on Redis: the replay guard shared
// by every replica using the same Redis and prefix. It must be created
// with [NewNonceStore].
type NonceStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewNonceStore returns a NonceStore on rdb. It panics if rdb is nil.
func NewNonceStore(rdb redis.UniversalClient, opts Options) *NonceStore {
	if rdb == nil {
		panic("redisstore: NewNonceStore: nil client")
	}
	return &NonceStore{rdb: rdb, prefix: opts.prefix() + "nonce:"}
}

// Spend marks nonce spent with SET NX, expiring [NonceMargin] after
// expiry (PXAT, by Redis's clock). A nonce already there is
// permission.ErrReplayed; any other failure is returned as it is (the
// Checker refuses the answer).
func (s *NonceStore) Spend(ctx context.Context, nonce string, expiry time.Time) error {
	until := expiry.Add(NonceMargin).UnixMilli()
	err := s.rdb.Do(ctx, "SET", s.prefix+nonce, "1", "NX", "PXAT", until).Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil): // NX: the key exists
		return fmt.Errorf("redisstore: nonce %s: %w", nonce, permission.ErrReplayed)
	default:
		return fmt.Errorf("redisstore: spending a nonce: %w", err)
	}
}

// AnswerStore is a permission.AnswerStore on Redis: the rules made from
// "always" answers, shared by every replica using the same Redis and
// prefix. The answers about one (principal, tool, subject) are one hash,
// capability → "allow" or "deny", expiring [Options].AnswerTTL after the
// last answer. It must be created with [NewAnswerStore].
type AnswerStore struct {
	rdb    redis.UniversalClient
	prefix string
	ttl    time.Duration
}

// NewAnswerStore returns an AnswerStore on rdb. It panics if rdb is nil.
func NewAnswerStore(rdb redis.UniversalClient, opts Options) *AnswerStore {
	if rdb == nil {
		panic("redisstore: NewAnswerStore: nil client")
	}
	ttl := DefaultAnswerTTL
	if opts.AnswerTTL != 0 {
		ttl = opts.AnswerTTL
	}
	return &AnswerStore{rdb: rdb, prefix: opts.prefix() + "answers:", ttl: ttl}
}

// key is the hash of the answers about (principal, tool, subject): a
// digest of the three, length-prefixed, so that no value can reach
// another's key.
func (s *AnswerStore) key(principal, tool, subject string) string {
	h := sha256.New()
	for _, v := range []string{principal, tool, subject} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(v)))
		h.Write(n[:])
		h.Write([]byte(v))
	}
	return s.prefix + hex.EncodeToString(h.Sum(nil))
}

// Remember writes answers in one transaction (MULTI/EXEC): all or none.
func (s *AnswerStore) Remember(ctx context.Context, answers []permission.Answer) error {
	for _, a := range answers {
		if a.Effect != authz.Allow && a.Effect != authz.Deny {
			return fmt.Errorf("redisstore: answer with effect %v", a.Effect)
		}
	}
	_, err := s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, a := range answers {
			k := s.key(a.Principal, a.Tool, a.Subject)
			p.HSet(ctx, k, a.Capability, string(a.Effect))
			if s.ttl > 0 {
				p.PExpire(ctx, k, s.ttl)
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("redisstore: remembering answers: %w", err)
	}
	return nil
}

// Recall reads the answers about every subject in one round trip.
func (s *AnswerStore) Recall(ctx context.Context, principal, tool string, subjects []string) ([]map[string]authz.Effect, error) {
	cmds := make([]*redis.MapStringStringCmd, len(subjects))
	_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sub := range subjects {
			cmds[i] = p.HGetAll(ctx, s.key(principal, tool, sub))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("redisstore: recalling answers: %w", err)
	}
	out := make([]map[string]authz.Effect, len(subjects))
	for i, c := range cmds {
		h := c.Val()
		if len(h) == 0 {
			continue
		}
		out[i] = make(map[string]authz.Effect, len(h))
		for capability, v := range h {
			switch v {
			case "allow":
				out[i][capability] = authz.Allow
			case "deny":
				out[i][capability] = authz.Deny
			default:
				return nil, fmt.Errorf("redisstore: answer %q for capability %q: want allow or deny", v, capability)
			}
		}
	}
	return out, nil
}

// Limiter is a ratelimit.Limiter on Redis: one GCRA bucket per caller
// key (github.com/go-redis/redis_rate, one atomic script run per call),
// shared by every replica using the same Redis and prefix. While Redis
// cannot answer it falls back to an in-process limiter with the same
// limit (see the package documentation for why). It must be created
// with [NewLimiter].
type Limiter struct {
	rl       *redis_rate.Limiter
	limit    redis_rate.Limit
	prefix   string
	fallback ratelimit.Limiter
	logger   *slog.Logger
	down     atomic.Bool
}

// NewLimiter returns a Limiter enforcing l on rdb. It panics if rdb is
// nil or l is not valid (ratelimit.Limit.Check).
func NewLimiter(rdb redis.UniversalClient, l ratelimit.Limit, opts Options) *Limiter {
	if rdb == nil {
		panic("redisstore: NewLimiter: nil client")
	}
	if err := l.Check(); err != nil {
		panic("redisstore: NewLimiter: " + err.Error())
	}
	logger := slog.Default()
	if opts.Logger != nil {
		logger = opts.Logger
	}
	return &Limiter{
		rl:       redis_rate.NewLimiter(rdb),
		limit:    redis_rate.Limit{Rate: l.Rate, Period: l.Period, Burst: l.Burst},
		prefix:   opts.prefix(),
		fallback: ratelimit.NewLimiter(l),
		logger:   logger,
	}
}

// Allow counts one call of the caller named key. It returns an error
// only when ctx ended.
func (l *Limiter) Allow(ctx context.Context, key string) (ratelimit.Result, error) {
	res, err := l.rl.Allow(ctx, l.prefix+key, l.limit)
	if err != nil {
		if ctx.Err() != nil {
			return ratelimit.Result{}, ctx.Err()
		}
		if !l.down.Swap(true) {
			l.logger.WarnContext(ctx, "redisstore: Redis cannot answer; the rate limit is enforced per process until it does", slog.Any("error", err))
		}
		return l.fallback.Allow(ctx, key)
	}
	if l.down.Swap(false) {
		l.logger.InfoContext(ctx, "redisstore: Redis answers again; the rate limit is shared again")
	}
	if res.Allowed > 0 {
		return ratelimit.Result{Allowed: true}, nil
	}
	return ratelimit.Result{RetryAfter: res.RetryAfter}, nil
}
