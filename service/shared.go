package service

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/resultcache"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/tasks"
)

// redisOptions parses a -redis URL, with short timeouts where it sets
// none: a call waits for them before it fails closed while Redis is
// down. Its errors never hold the URL (it may hold a password).
func redisOptions(raw string) (*redis.Options, error) {
	o, err := redis.ParseURL(raw)
	if err != nil {
		return nil, fmt.Errorf("want redis://[user:password@]host:port/db or rediss://…: %s", strings.ReplaceAll(err.Error(), raw, "URL"))
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = time.Second
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = 500 * time.Millisecond
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 500 * time.Millisecond
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 1
	}
	o.ContextTimeoutEnabled = true
	return o, nil
}

// redactedURL is u without its password, for the log.
func redactedURL(u string) string {
	if pu, err := url.Parse(u); err == nil {
		return pu.Redacted()
	}
	return "(unparsable URL)"
}

// shared holds what replicas share through Redis. A nil *shared (no
// -redis) keeps everything in this process.
type shared struct {
	rdb     *redis.Client
	opts    redisstore.Options
	cancels *redisstore.Cancellations // once cancellations was called
}

// newShared connects to cfg.Redis, if set. Every key the service writes
// starts with "toolroute:NAME:".
func newShared(name string, cfg Config, logger *slog.Logger) (*shared, error) {
	if cfg.Redis == "" {
		return nil, nil
	}
	o, err := redisOptions(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("-redis: %w", err)
	}
	rdb := redis.NewClient(o)
	// go-redis's own lines (a failed dial on every call while Redis is
	// down) go through the service's logger, once per state change.
	redisstore.SetLogger(logger, rdb)
	return &shared{rdb: rdb, opts: redisstore.Options{Prefix: "toolroute:" + name + ":", Logger: logger}}, nil
}

// service is Redis as a server.Service: the start fails, naming it, if
// Redis does not answer (a wrong -redis). Once started, a Redis outage
// fails permission answers closed and makes the rate limit per process;
// it does not stop the service.
func (s *shared) service() server.Service {
	return server.Service{
		Key: "redis",
		Warm: func(ctx context.Context) error {
			if err := s.rdb.Ping(ctx).Err(); err != nil {
				return fmt.Errorf("Redis does not answer: %w", err)
			}
			return nil
		},
	}
}

func (s *shared) close() {
	if s != nil {
		if s.cancels != nil {
			s.cancels.Close()
		}
		s.rdb.Close()
	}
}

// cancellations carries a 2025 client's cancellation to the replica
// running its call, through Redis when s is not nil; nil (this process
// only) without -redis.
func (s *shared) cancellations() server.Cancellations {
	if s == nil {
		return nil
	}
	s.cancels = redisstore.NewCancellations(s.rdb, s.opts)
	return s.cancels
}

// taskStore keeps the tasks (server/tasks): in Redis when s is not nil,
// so that any replica polls, answers and cancels a task another runs;
// nil (this process only) without -redis.
func (s *shared) taskStore() tasks.Store {
	if s == nil {
		return nil
	}
	return redisstore.NewTaskStore(s.rdb, s.opts)
}

// confirmer is delete_item's permission checker: its key, replay guard
// and remembered answers shared through Redis when s is not nil.
func (s *shared) confirmer(key []byte) *permission.Checker {
	opts := permission.Options{
		// Answers and request states are bound to the caller.
		Principal: func(ctx context.Context, _ *mcp.CallToolRequest) string {
			c, _ := authz.CallerFromContext(ctx)
			return c.Subject
		},
	}
	if s != nil {
		opts.Key = key
		opts.Nonces = redisstore.NewNonceStore(s.rdb, s.opts)
		opts.Answers = redisstore.NewAnswerStore(s.rdb, s.opts)
	}
	return permission.New(opts)
}

// replayCache records the DPoP proofs accepted, in Redis when s is not
// nil; nil (this process only) without -redis.
func (s *shared) replayCache() oauth.ReplayCache {
	if s == nil {
		return nil
	}
	return redisstore.NewReplayCache(s.rdb, s.opts)
}

// limiter is the per-caller limit of -rate-limit n: on Redis when s is
// not nil, else in this process.
func (s *shared) limiter(n int) ratelimit.Limiter {
	if s != nil {
		return redisstore.NewLimiter(s.rdb, ratelimit.PerSecond(n), s.opts)
	}
	return ratelimit.NewLimiter(ratelimit.PerSecond(n))
}

// resultStore keeps the cached results of read-only tools: on Redis
// when s is not nil (every replica shares them), else nil (the cache's
// own, in this process).
func (s *shared) resultStore() resultcache.Store {
	if s == nil {
		return nil
	}
	return redisstore.NewResultStore(s.rdb, s.opts)
}

// subjectKey is the key of the subjects proxyToken derives from bearer
// tokens: derived from the state key, so that every replica names a
// caller alike (permission answers and rate limits are bound to the
// subject); random per process without one.
func subjectKey(stateKey []byte) []byte {
	if len(stateKey) == 0 {
		key := make([]byte, 32)
		rand.Read(key)
		return key
	}
	m := hmac.New(sha256.New, stateKey)
	m.Write([]byte("toolroute/service proxy subject key v1"))
	return m.Sum(nil)
}
