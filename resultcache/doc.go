// Package resultcache caches the results of read-only tools that opt in
// (tool.Tool.Cache): a receiving middleware for server.Options.Middleware
// that answers a caller's repeated call of such a tool, with the same
// arguments, from the result the tool returned, for the tool's TTL.
//
// What it never does:
//
//   - share a result between callers: the key is the caller's subject,
//     roles, OAuth client and scopes, the tool and the canonical JSON of
//     the arguments (object keys sorted, numbers as written), hashed with
//     SHA-256; a caller without a subject (anonymous) is not cached;
//   - cache a failed call (a protocol error or an isError result), a
//     call that asks the user a question (an input_required result,
//     MCP's multi-round-trip requests) or one that answers one
//     (inputResponses, requestState), nor arguments it cannot put in one
//     canonical form (invalid JSON, a duplicate key);
//   - answer an expired result, unless the tool's StaleOnError allows it
//     and the call failed because its upstream is down
//     (upstream.Unavailable, or a network error): then the caller's
//     result expired at most StaleOnError ago answers instead.
//
// Results live in memory by default, bounded by entries and bytes (the
// least recently used go first); [Options].Store puts them elsewhere
// (redisstore.ResultStore: every replica shares them). The lookups
// (hit, miss, stale) and the evictions are counted in the metrics
// toolroute.resultcache.lookups and toolroute.resultcache.evictions.
//
// Under server.New the middleware sees only calls authorization let
// through, with the caller in the context and the call's tool
// (tool.CallFromContext) telling its Cache. A hit does not run the tool,
// so its upstream requests are not checked again: a caller's revoked
// access to a route takes effect for its cached results at their TTL,
// unless the revocation changes the key (the caller's roles, or the
// scope: see [Options.Scope]; the kit's is the role policy's digest).
package resultcache
