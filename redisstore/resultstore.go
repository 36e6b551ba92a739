package redisstore

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
)

// ResultStore is a resultcache.Store on Redis: the cached results of
// read-only tools, shared by every replica using the same Redis and
// prefix, so that a caller's repeated call is answered from the cache
// whichever replica it reaches. Each result is one string under its key
// (already a digest of the caller and the arguments), expiring with its
// time to keep (Redis drops it then). It bounds no number of entries:
// the results' TTLs and Redis's maxmemory policy do; resultcache bounds
// each result's size. It must be created with [NewResultStore].
type ResultStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewResultStore returns a ResultStore on rdb. It panics if rdb is nil.
func NewResultStore(rdb redis.UniversalClient, opts Options) *ResultStore {
	if rdb == nil {
		panic("redisstore: NewResultStore: nil client")
	}
	return &ResultStore{rdb: rdb, prefix: opts.prefix() + "result:"}
}

// Get returns the result stored under key, and whether there is one.
func (s *ResultStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := s.rdb.Get(ctx, s.prefix+key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// Set stores value under key for ttl (at least a millisecond).
func (s *ResultStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	return s.rdb.Set(ctx, s.prefix+key, value, max(ttl, time.Millisecond)).Err()
}
