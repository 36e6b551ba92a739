// Package authz decides who sees which tools and which upstream requests a
// tool call may send, from the same (URI, method) routes the RBAC proxy in
// front of the upstream services already authorizes: there is no second
// policy language.
//
// # Callers
//
// The server puts the request's [Caller] (subject, roles, bearer) in the
// context with [WithCaller]. The bearer is forwarded upstream and to the
// RBAC proxy, and never printed nor logged: Caller's String, Format and
// LogValue redact it.
//
// # Authorizers
//
// An [Authorizer] decides one route ([Authorizer.Allow]: nil, or a
// *[DeniedError], *[UnauthenticatedError] or *[OutageError]) or a batch
// ([Authorizer.AllowMany], one round trip for a whole tools/list). Three
// are provided:
//
//   - [ProxyAuth] asks the RBAC proxy's auth API, so toolroute decides
//     exactly as the proxy will;
//   - [Policy] decides in-process from role policies in the proxy's own
//     JSON shape; [RolePolicyFor] writes one that grants exactly a set of
//     routes (say, those of the read-only tools);
//   - [AllowAll] turns authorization off, for tests and local development.
//
// [Cached] puts a bounded, short-lived decision cache in front of any of
// them. Everything fails closed: an outage, a missing credential or an
// unexpected answer never allows anything.
//
// # Visibility and the call guard
//
// [Middleware] is an MCP receiving middleware. In tools/list a tool is
// listed iff it is local or the caller may reach at least one of its
// routes; in tools/call a tool the caller cannot see answers exactly like
// a tool that does not exist, in every state of the authorizer (an outage
// included), so that "hidden but callable" cannot happen and no answer
// leaks a hidden tool's existence. The time an answer takes can: see
// [Middleware].
//
// # Upstream requests
//
// [Transport] wraps the http.RoundTripper of an upstream service's client,
// for the service's origin: a request to any other origin is refused (a
// configuration bug, logged), so the caller's bearer goes nowhere else.
// Every request a tool sends must fall under one of the routes the tool
// declares (else it is a configuration bug, refused and logged), and the
// caller must be allowed it; only then is it sent, with the caller's
// bearer. Caller-controlled values cannot widen a route: a placeholder
// matches exactly one escaped segment, never "." or "..", and never one
// that holds a path separator, escaped or not ("%2F", "%5C"), since an
// upstream that decodes it before routing would see another segment. A
// refused request fails with an error wrapping the authorization error,
// whose fixed text a handler made by tool.Handle shows the client
// whatever the tool returns.
// Transport is given its authorizer (the server's, or another): it never
// takes one from the request's context.
package authz
