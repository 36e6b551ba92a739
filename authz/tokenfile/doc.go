// Package tokenfile reads tokens files: the static bearer tokens of local
// development and tests, each naming the caller it stands for.
//
// A tokens file is a JSON array of entries:
//
//	[
//	  {"token": "demo-viewer", "subject": "viewer@demo", "roles": ["viewer"]},
//	  {"token": "demo-admin", "subject": "admin@demo", "roles": ["admin"]}
//	]
//
// [Parse] and [Read] refuse unknown fields, data after the array, an
// empty or duplicate token, a token holding white space or a control
// character (it could not travel in an Authorization header), an empty
// subject and, given the roles of a policy, a role the policy does not
// define. Every problem is reported, each naming its entry by index (and
// subject): no error ever quotes a token, and an [Entry] prints its token
// as "[redacted]".
//
// [Callers] turns the entries into the map server.StaticTokens takes:
//
//	entries, err := tokenfile.Read("tokens.json", policy.Roles())
//	...
//	verifier := server.StaticTokens(tokenfile.Callers(entries))
//
// Static tokens are for demos, tests and local development (see
// authz/devproxy, a local RBAC proxy that reads the same file); a
// production service verifies tokens of an identity provider
// (authz/oauth) or asks its RBAC proxy.
package tokenfile
