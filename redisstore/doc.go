// Package redisstore keeps on Redis what replicas of a toolroute service
// must share (github.com/redis/go-redis/v9): the replay guard of
// permission answers ([NonceStore], a permission.NonceStore), the rules
// made from "always" answers ([AnswerStore], a permission.AnswerStore),
// a per-caller rate limit ([Limiter], a ratelimit.Limiter, GCRA by
// github.com/go-redis/redis_rate), the DPoP proofs accepted
// ([ReplayCache], an authz/oauth ReplayCache), a 2025 client's stateless
// notifications/cancelled carried to the replica running the call
// ([Cancellations], a server.Cancellations, on pub/sub), small
// messages from one replica to all the others ([Broadcast], on pub/sub:
// the kit's announcement of a policy reload), and the cached results of
// read-only tools ([ResultStore], a resultcache.Store).
//
//	rdb := redis.NewClient(opts)                   // or redis.ParseURL
//	redisstore.SetLogger(logger, rdb)              // go-redis's own lines, once per state change
//	stores := redisstore.Options{Prefix: "catalog:", Logger: logger}
//	perms := permission.New(permission.Options{
//		Key:     key,                              // permission.ReadKeyFile: one key for every replica
//		Nonces:  redisstore.NewNonceStore(rdb, stores),
//		Answers: redisstore.NewAnswerStore(rdb, stores),
//		Principal: ...,
//	})
//	limit := ratelimit.Middleware(redisstore.NewLimiter(rdb, ratelimit.PerSecond(10), stores), ratelimit.Options{})
//	cancels := redisstore.NewCancellations(rdb, stores) // Close it at shutdown
//	dpop, err := oauth.NewDPoP(oauth.DPoPOptions{Confirmation: jwt.Confirmation, Replay: redisstore.NewReplayCache(rdb, stores)})
//	httpOpts := server.HTTPOptions{Cancellations: cancels, ...} // HTTPServerOptions.Endpoint
//
// It is a package of its own so that a service which does not import it
// links no Redis client.
//
// # When Redis is down
//
// Permission answers fail closed: a call whose permissions need Redis
// (to spend an answer's nonce, or to recall or remember an "always"
// answer) gets a tool error ([permission.StoreError]) and nothing is
// granted; rules (permission.Options.Rules) still decide, as they need
// no store. Once Redis answers again, so do the stores: the client
// reconnects by itself, no replica needs a restart.
//
// The rate limiter degrades to a limit per process: while Redis cannot
// answer, each replica enforces the same limit in memory
// (ratelimit.NewLimiter), logging the switch once each way. A caller may
// then make up to the limit times the number of replicas, which is
// still bounded. Failing open would leave callers unbounded exactly when
// a part of the system is down; failing closed would turn a Redis
// outage into a full outage of every tool, while the limiter guards
// capacity, not access (authorization fails closed on its own).
//
// DPoP proofs are refused while Redis is down (HTTP 503 with
// Retry-After): a proof that cannot be recorded could be replayed.
//
// Cancellations degrade to each process's own: a cancellation that
// lands on another replica than its call's reaches nothing (the call
// runs to its end), and nothing waits for Redis (the server publishes in
// the background). The subscription comes back by itself.
//
// # Logging
//
// While Redis is down, nothing here logs once per call: the limiter logs
// its switch to the in-process limit and back, the subscription its
// failure and its return, the stores nothing (their callers get the
// errors). go-redis itself logs each failed dial, to standard error
// unless told otherwise; [SetLogger] sends its lines to the service's
// slog logger instead, once per state change (see [Logger]).
//
// # Timeouts
//
// Each operation is one round trip (the limiter's is one EVALSHA), bound
// by the client's own timeouts (redis.Options DialTimeout, ReadTimeout,
// WriteTimeout) and, with ContextTimeoutEnabled, by the call's context.
// Keep them short — a call waits for them before it fails closed.
package redisstore
