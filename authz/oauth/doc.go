// Package oauth makes a toolroute server an OAuth 2.1 resource server, as
// the MCP authorization specification asks of an HTTP MCP server: it
// verifies the access tokens of an authorization server (the company's
// identity provider: Keycloak, Entra ID, Okta, Auth0, Zitadel, Dex, ...),
// turns their claims into an [authz.Caller], and obtains tokens for
// upstream services by token exchange instead of passing the client's
// token through.
//
// It is a package of its own so that a service that does not import it
// links no JWT library.
//
// # Verifying tokens
//
// [JWTVerifier] verifies JWT access tokens with the issuer's published
// keys (discovered, cached, refetched on rotation; golang-jwt and keyfunc
// do the cryptography). [IntrospectionVerifier] asks the authorization
// server about opaque tokens (RFC 7662). Both have a Verify method of the
// shape of server.TokenVerifier, and a Ready method for /readyz:
//
//	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{
//		Issuer:     "https://id.example.com/realms/main",
//		Audience:   "https://tools.example.com/mcp",
//		RolesClaim: "realm_access.roles",
//	})
//	...
//	server.HTTPServerOptions{
//		Endpoint:   server.HTTPOptions{Verifier: v.Verify},
//		ReadyCheck: v.Ready,
//		ResourceMetadata: &oauthex.ProtectedResourceMetadata{
//			Resource:             "https://tools.example.com/mcp",
//			AuthorizationServers: []string{"https://id.example.com/realms/main"},
//		},
//	}
//
// A refused token is an error wrapping the SDK's auth.ErrInvalidToken
// (the server answers HTTP 401 with a WWW-Authenticate challenge naming
// the resource metadata); an authorization server that cannot be reached,
// with no keys held, is an *[authz.OutageError] (HTTP 503, never 401).
//
// # Roles
//
// Roles come from a configurable claim: "roles" (the default), a dotted
// path such as "realm_access.roles" (Keycloak), "groups", or a
// space-separated string such as "scope". A token without it is an
// authenticated caller without roles: it sees the local tools only. The
// same role policy ([authz.Policy]) and RBAC proxy then decide as they do
// for static tokens.
//
// # Proof of possession
//
// [DPoP] checks RFC 9449 proofs in front of the endpoint, for tokens
// bound to a client's key ("cnf": {"jkt": ...}): a stolen bound token is
// useless without the key. Its Handler goes in server.HTTPOptions.Wrap:
//
//	d, err := oauth.NewDPoP(oauth.DPoPOptions{
//		Confirmation: v.Confirmation, // what key a verified token is bound to
//		URL:          "https://tools.example.com/mcp",
//		Replay:       redisstore.NewReplayCache(rdb, stores), // nil: this process only
//	})
//	...
//	server.HTTPOptions{Verifier: v.Verify, Wrap: d.Handler}
//
// # Upstream requests
//
// [Exchanger] trades the caller's token for one whose audience is the
// upstream service (RFC 8693), cached per subject until shortly before it
// expires. Its [Exchanger.Transport] goes under [authz.Transport]:
//
//	authz.Transport(exchanger.Transport(http.DefaultTransport), "catalog", "http://catalog:8080", policy, authz.Options{})
//
// so that every request is checked first, and then sent with the
// exchanged token instead of the caller's. [WithoutBearer] sends requests
// with no token at all, for upstreams that need none.
package oauth
