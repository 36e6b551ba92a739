// Package devproxy is a local stand-in for the RBAC proxy in front of
// the upstream services: an [http.Handler] that answers the proxy's auth
// API exactly as [authz.ProxyAuth] asks it, deciding with an
// [authz.Policy] for the callers of a tokens file (package tokenfile),
// and [Command], the dev-proxy command that serves it on a loopback
// address. With it, a service started with -proxy-auth runs on a laptop
// as it runs behind the real proxy.
//
// # The wire format
//
// One decision:
//
//	POST /api/v3/auth
//	Authorization: Bearer TOKEN
//	X-Forwarded-Uri: /catalog/api/v1/items/42
//	X-Forwarded-Method: GET
//
// is answered 204 (allowed) or 403 (denied). The decision is made for
// the concrete path of X-Forwarded-Uri (its query, if any, removed): the
// policy's path regexps match concrete paths as they match templates.
//
// A batch:
//
//	POST /api/v3/auth-routes
//	Authorization: Bearer TOKEN
//	[{"path": "/catalog/api/v1/items/{id}", "method": "GET"}, ...]
//
// is answered 200 with one entry per route asked, in the order asked (a
// duplicate is answered again):
//
//	[{"path": "/catalog/api/v1/items/{id}", "method": "GET", "authResult": true}, ...]
//
// or 403 if every route asked is denied (an empty batch is answered 200
// with []).
//
// Both endpoints answer 401, with a WWW-Authenticate: Bearer challenge
// (error="invalid_token" for a token the file does not hold), to a
// request without a bearer token or with an unknown one, before looking
// at the rest of the request. A malformed request is answered 400 with a
// message saying what is wrong: more than one Authorization header, a
// missing or repeated X-Forwarded-Uri or X-Forwarded-Method, a method
// other than an upper-case HTTP method, a path that does not begin with
// "/" or holds white space, a control character, a fragment or a dot
// segment ("." or "..", escaped or not: the upstream would resolve it to
// another path than the one decided), a batch body that is not a JSON
// array of {"path", "method"} (unknown fields and trailing data
// included), or a batch route with a query. A batch body over
// [Options.MaxBodyBytes] or of more than [Options.MaxRoutes] routes is
// answered 413: the body is decoded as it arrives, so memory follows the
// bytes received, never a declared Content-Length. Other methods than
// POST get 405, other paths 404.
//
// # Logging
//
// Every request is logged to [Options.Logger]: the caller's subject and
// the route and decision, or the number of routes asked and allowed, or
// why the request was refused. Tokens are never logged nor echoed.
//
// # The command
//
//	example-service dev-proxy -policy example-service/policy.json -tokens example-service/tokens.json
//
// prints the flag to give the service (-proxy-auth http://127.0.0.1:9401)
// and serves until interrupted. [Command] is that command line, in the
// shape of authz/oauth/devidp's: a service kit runs it as a subcommand,
// under the service's name.
package devproxy
