// Package ratelimit bounds how often each caller may call tools: a
// token bucket per caller, applied as receiving middleware on tools/call.
//
//	lim := ratelimit.NewLimiter(ratelimit.PerSecond(10)) // per process
//	opts := server.Options{
//		Authorizer: a,
//		Middleware: []mcp.Middleware{ratelimit.Middleware(lim, ratelimit.Options{})},
//	}
//
// A call over the limit is answered with a JSON-RPC error, code
// [CodeRateLimited], whose message and data say when to retry; it is
// never dropped, and no tool runs. Other methods (tools/list and the
// rest) are not limited. The server logs such a call at WARN with the
// outcome "rate_limited", and package server/telemetry records it so
// (span status, audit outcome; error.type "-32010").
//
// [NewLimiter] keeps its buckets in this process (golang.org/x/time/rate):
// with several replicas behind a load balancer, each one allows a caller
// the whole limit. A [Limiter] on a shared store bounds a caller across
// replicas: package redisstore (redisstore) has one on
// Redis (GCRA, github.com/go-redis/redis_rate). This package itself links
// no store client.
package ratelimit
