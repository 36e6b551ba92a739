// Package oidctest runs the development OpenID provider of package
// devidp (zitadel/oidc's op over an in-memory storage) on 127.0.0.1 for
// tests, stopped at the end of each: client credentials (JWT or opaque
// access tokens), token introspection (RFC 7662), token exchange (RFC
// 8693) and revocation, with failures reported through testing.TB.
// Clients stand for users: a client's credentials-grant token has the
// client's ID as its subject and the client's claims (roles).
//
// The authorization code flow (a browser login) is not provided: tests
// drive the provider as a machine client would.
package oidctest
