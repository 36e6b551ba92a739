// Package oidctest runs a real OpenID provider on 127.0.0.1 for tests:
// zitadel/oidc's certified op package over an in-memory storage (the
// pattern of its example server), with the grants a resource server's
// tests need: client credentials (JWT or opaque access tokens), token
// introspection (RFC 7662), token exchange (RFC 8693) and revocation.
// Clients stand for users: a client's credentials-grant token has the
// client's ID as its subject and the client's claims (roles).
//
// The authorization code flow (a browser login) is not provided: tests
// drive the provider as a machine client would.
package oidctest
