// Package devidp is a development OpenID provider: a real one, so that a
// toolroute service's OAuth mode ([github.com/toolroute/toolroute/authz/oauth])
// can be tried on a laptop in two commands, and tested, without an
// identity provider of the company's.
//
// # For development only
//
// Nothing about it is fit to protect anything. Its signing keys are
// generated when it starts and live in the process's memory only (tokens
// stop verifying when it exits); its clients and their secrets come from
// code or from flags, and the command prints its secret for anyone to
// read; a client with Mint obtains tokens for any subject and any roles
// it names; its clients are in op's DevMode (checks a production
// provider makes of its clients are relaxed). It listens on loopback
// unless told explicitly otherwise.
//
// # What it is
//
// zitadel/oidc's certified op package over an in-memory storage (the
// pattern of its example server), with the grants a resource server
// meets: client credentials (JWT or opaque access tokens), token
// introspection (RFC 7662), token exchange (RFC 8693) and revocation
// (RFC 7009), at the endpoints of its discovery document ([DiscoveryPath],
// [TokenPath], [IntrospectionPath], [RevocationPath], [KeysPath]). Keys
// can be rotated ([Provider.Rotate]) and arbitrary claims signed
// ([Provider.Sign]), for tests. The authorization code flow (a browser
// login) is not provided: users are stood in for by clients.
//
//	p, err := devidp.Start("127.0.0.1:0", devidp.Options{Clients: []devidp.Client{
//		{ID: "alice", Secret: "alice-secret", Audience: []string{"http://127.0.0.1:8080/mcp"}, Claims: map[string]any{"roles": []string{"viewer"}}},
//	}})
//	...
//	defer p.Close()
//	token, err := p.Token(ctx, "alice", devidp.TokenOptions{})
//
// # Minting
//
// A client with Mint names its token's subject, roles and audience in the
// scope of an ordinary client-credentials request, so that any OAuth
// client (curl, an SDK) can ask: "sub:alice role:editor
// aud:http://127.0.0.1:8080/mcp" ([ScopeSubject], [ScopeRole],
// [ScopeAudience]; zitadel itself asks for roles and audiences with
// scopes). The roles are written to the claim [Options].RolesClaim
// names, and the response's scope repeats the request's.
// [RequestToken] makes such a request from any process.
//
// # The command
//
// [Command] is the dev-idp command line a service binary offers as a
// subcommand:
//
//	$ example-service dev-idp
//	dev-idp: DEVELOPMENT ONLY: ...
//	dev-idp: issuer http://127.0.0.1:9400
//	...
//	$ TOKEN=$(example-service dev-idp token -roles editor)
package devidp
