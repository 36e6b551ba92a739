// Package statelesscancel works around go-sdk issue #1093 (closed by
// go-sdk PR #1099 for the 2026-07-28 protocol only): the SDK's stateless
// streamable HTTP handler builds a new session for every POST, so a
// stateless call of a 2025 protocol (2025-03-26 to 2025-11-25) is never
// cancelled by the SDK:
//
//   - when its POST ends (the client went away), its handler runs on:
//     StreamableHTTPOptions.PropagateRequestCancellation ties a call to
//     its request only for 2026-07-28 requests ([SDKEndsCalls]);
//   - a notifications/cancelled naming it comes in a POST of its own,
//     which reaches that POST's new session, which knows nothing of the
//     call: the SDK ignores it (no go-sdk issue names this half; none
//     was found at v1.8.0).
//
// The server ends both itself: it ties every call of a stateless request
// to the request, and looks a cancelled call up by its caller and id.
// The parts below are the pure ones: [SDKEndsCalls];
// internal/sdkfix/statelesscancel/rpcscan, the scan of a request's body
// for the call ids it carries and the ids its cancellations name; and
// internal/sdkfix/statelesscancel/callreg, the registry of stateless
// requests in flight by caller and call id. The rest stays in server
// (httpcalls.go bindCalls, cancellations.go), because it is the server's
// own call path: a call's context and its cause, the drain and deadline
// of a shutdown, the relay of cancellations between replicas
// (server.Cancellations), and the identity of a verified caller.
//
// Delete this package, and that part of server, when
// TestCanarySDKIgnoresStateless2025Cancellation fails: the SDK then ends
// a stateless 2025 call itself, with its request or at a cancellation.
package statelesscancel

import "net/http"

// SDKEndsCalls reports whether go-sdk ends the calls of the stateless
// request r when r ends (with StreamableHTTPOptions.
// PropagateRequestCancellation set): for 2026-07-28 requests, which say
// so in their Mcp-Protocol-Version header. The server's
// TestStatelessCallEndsWithItsRequest fails if the SDK stops.
func SDKEndsCalls(r *http.Request) bool {
	return r.Header.Get("Mcp-Protocol-Version") >= "2026-07-28"
}
