// Package statelesshttp is toolroute's own transport for stateless
// streamable HTTP (MCP): a [mcp.Transport] and [mcp.Connection] of one
// call, built on the SDK's public interfaces, with the SDK's server,
// sessions, middleware and handlers serving the call.
//
// # What it serves, and what it hands on
//
// The [Handler] serves a request itself only when it is plain: a POST
// whose headers the SDK's handler accepts (DNS rebinding protection,
// media types, a protocol version header of a version before 2026-07-28
// that the server serves, none, or 2026-07-28 with a matching
// Mcp-Method), whose body is one well-formed JSON-RPC call of a method
// that changes nothing in a session: before 2026-07-28, tools/call,
// tools/list and the other list, get and read methods, ping; from
// 2026-07-28 (with its per-request _meta), the lists,
// completion/complete, server/discover, and prompts/get,
// resources/read and tools/call whose Mcp-Name header equals the name
// (or uri) in the body, as go-sdk's handler decides it, a tools/call
// only of a tool that [Options.HeaderParams] says has no x-mcp-header
// argument (whose Mcp-Param header only the SDK checks). It
// decodes that body once with encoding/json, connects a session of the
// SDK's server to a connection that hands it the call and writes the
// answer (and the notifications the call sends before it) as
// server-sent events, or a 2026-07-28 protocol error as JSON with its
// HTTP status, exactly as the SDK's handler writes them. A 2026-07-28
// call ends with its request, as go-sdk's handler ends it when
// StreamableHTTPOptions.PropagateRequestCancellation is set.
//
// Every other request (GET, DELETE, batches, notifications, initialize,
// malformed JSON, a 2026-07-28 call whose Mcp-Name is missing or does
// not match, or of a tool with x-mcp-header arguments or one
// HeaderParams does not know, wrong headers) goes
// to the SDK's own stateless handler,
// which answers it as it always did. A request the fast path cannot
// tell for sure it would answer alike goes there too: its checks may be
// stricter than the SDK's, never laxer. The differential test in
// package server sends one corpus to both and compares the answers.
//
// What the SDK's handler spends that this one does not: its JSON
// decoder (which allocates a 32 KiB buffer for every value it decodes)
// run over the body three to five times before the session decodes it
// again, a random stream id, and a session connection with maps of
// streams.
package statelesshttp
