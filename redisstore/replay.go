package redisstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// ReplayCache is an authz/oauth ReplayCache on Redis: the DPoP proofs
// accepted by every replica using the same Redis and prefix, each kept
// until its window ends plus [NonceMargin] (the replicas' clocks may
// differ), so that a proof accepted by one replica is refused by all. It
// must be created with [NewReplayCache].
type ReplayCache struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewReplayCache returns a ReplayCache on rdb. It panics if rdb is nil.
func NewReplayCache(rdb redis.UniversalClient, opts Options) *ReplayCache {
	if rdb == nil {
		panic("redisstore: NewReplayCache: nil client")
	}
	return &ReplayCache{rdb: rdb, prefix: opts.prefix() + "dpop:"}
}

// Use records id with SET NX, expiring [NonceMargin] after until (PXAT,
// by Redis's clock), and reports whether it was new. A failure (Redis
// down) is returned: the proof is refused, never let in unrecorded.
func (c *ReplayCache) Use(ctx context.Context, id string, until time.Time) (bool, error) {
	err := c.rdb.Do(ctx, "SET", c.prefix+id, "1", "NX", "PXAT", until.Add(NonceMargin).UnixMilli()).Err()
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, redis.Nil): // NX: the key exists
		return false, nil
	default:
		return false, fmt.Errorf("redisstore: recording a DPoP proof: %w", err)
	}
}
