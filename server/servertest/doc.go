// Package servertest connects real MCP clients to servers built by the
// server package, for tests: in memory as a chosen caller ([Connect]), or
// over streamable HTTP with a bearer token ([ConnectHTTP]). Sessions are
// closed when the test ends.
package servertest
