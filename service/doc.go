// Package service is toolroute's service kit: it turns a service's tool
// registries into a complete microservice, with every production
// capability set by flags and TOOLROUTE_* environment variables, so that
// a team writes its tools and a main of a few lines:
//
//	func main() {
//		service.Main("things-mcp", "1.0.0",
//			server.Tools(tools.Registry),
//			fx.Provide(tools.NewDeps), // func(service.Upstreams) *tools.Deps
//		)
//	}
//
// What the flags set (see [Config] and the README's "Service kit"
// section for the table): the listen address or stdio; the upstream
// services' origins (-upstream KEY=URL), whose clients ([Upstreams])
// check every request against the calling tool's routes and the caller
// before it leaves; authorization by a role policy (-policy) or an RBAC
// proxy (-proxy-auth); callers from static tokens (-tokens), OAuth 2.1
// access tokens (-oidc-issuer: JWT or introspection, with RFC 8693 token
// exchange for upstream requests) or the proxy; state shared by replicas
// through Redis (-redis: the permission replay guard, remembered answers,
// the rate limit, cancellations, policy reloads); a per-caller rate
// limit; Prometheus metrics, OpenTelemetry traces (OTEL_*) and an audit
// trail; a drain on SIGTERM. The -policy and -tokens files reload on
// SIGHUP and when they change, both or neither, and the listeners whose
// tools changed are told (notifications/tools/list_changed); tools/list
// pages carry a ttlMs (-list-ttl). The policy is linted against the tools' routes (package
// authz/lint): warnings at start, errors for check.
//
// The commands every service gets: serve (the default), check (the same
// flags; validates without serving or contacting anything), routes (the
// tool → route table, its exports for policy engines, the visibility
// matrix), dev-idp (a local OpenID provider, package authz/oauth/devidp)
// and dev-proxy (a local RBAC proxy, package authz/devproxy); and those
// of [Command.Commands].
//
// The environment rules: each flag of serve and check is also
// TOOLROUTE_ + its name in upper snake case (-proxy-auth is
// TOOLROUTE_PROXY_AUTH; -upstream things=URL is TOOLROUTE_UPSTREAM_THINGS);
// the command line wins; an empty variable counts as unset; a TOOLROUTE_
// variable that names no flag stops the start; a value a flag refuses
// names the variable and the accepted forms. A service's own subcommands
// get the same rules from [ParseFlags].
//
// The kit is fx, as everywhere in toolroute: Main builds one app of
// server.Module, the kit's providers ([Upstreams], [Config], the
// service's *slog.Logger, a *permission.Checker) and the service's
// options, and runs it.
package service
