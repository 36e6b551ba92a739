// Package reload swaps an authorizer while a service runs: a new role
// policy, read again from its file, takes over from the old one without
// a restart.
//
// An [Authorizer] decides with the current one of a sequence of
// authorizers, each a generation: [Authorizer.Swap] installs the next,
// atomically. A request decides under one generation from start to end:
// [Authorizer.Pin] (or the receiving middleware [Authorizer.Middleware],
// which pins every request) records the current generation in the
// request's context, and every decision made with that context — the
// tools/list filter, the tools/call guard, each upstream request the
// call sends through authz.Transport — asks that generation's
// authorizer, however many swaps happen meanwhile. A request that
// begins after a swap decides under the new generation only. No call is
// answered under a half-applied policy.
//
//	rel := reload.New(policy)
//	opts := server.Options{Authorizer: rel, Observers: []mcp.Middleware{rel.Middleware()}}
//	...
//	next, err := authz.ParsePolicy(data) // on SIGHUP, or when the file changed
//	if err != nil {
//		// keep the old policy: a broken file changes nothing
//	}
//	rel.Swap(next)
//
// # Decision caches
//
// A decision cache must never answer with a decision of an older
// generation once a newer one is current. [authz.Cached] in front of an
// Authorizer keys its decisions by generation too (it asks
// [Authorizer.Generation]), so that a swap leaves the old entries
// behind, unreachable, to expire; a cache inside a generation (Swap of
// authz.Cached(policy, ...)) is dropped with it. A cache in front of
// another decorator in front of the Authorizer (a telemetry wrapper)
// cannot see the generation: put it inside.
package reload
