// Package servertest connects real MCP clients to servers built by the
// server package, for tests: in memory as a chosen caller ([Connect]), or
// over streamable HTTP with a bearer token ([ConnectHTTP]). Sessions are
// closed when the test ends. [Options] picks the client's protocol version
// (to test 2025 clients) or the client itself (for its capabilities and
// handlers); [BearerClient] is the HTTP client ConnectHTTP uses, for plain
// HTTP requests with a bearer token. [VisibilityMatrix] lists a server's
// tools as a caller of each role, and [CheckVisibility] pins that role ×
// tool matrix in a golden file, so that a change to who sees what shows
// in review.
//
//	s, err := server.New(server.Options{Authorizer: policy}, server.Install(tools.Registry, deps))
//	...
//	cs := servertest.Connect(t, s, &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}, servertest.Options{})
//	res, err := cs.ListTools(ctx, nil)
package servertest
