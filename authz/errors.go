package authz

import (
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolroute/toolroute/internal/core/truncate"
	"github.com/toolroute/toolroute/tool"
)

// HiddenToolError is [Middleware]'s answer to a call of a tool the caller
// may not see, or that the server does not have: the client sees exactly
// the SDK's answer to an unknown tool, the JSON-RPC error -32602
// `unknown tool "NAME"`, so that no answer tells a hidden tool from a
// missing one (timing may: see [Middleware]). The server's log and
// telemetry tell them apart by Exists.
type HiddenToolError struct {
	// Tool is the name the client called.
	Tool string
	// Exists reports that the server has the tool and hides it from the
	// caller; false for a name it does not have. The client is not shown
	// it: it is for the server's log and telemetry, which must not take a
	// name that does not exist for a tool's (a caller-made label).
	Exists bool
}

// Error returns `unknown tool "NAME"`, the SDK's text, with a NAME
// longer than 128 bytes cut there and marked "…(truncated, N bytes)".
func (e *HiddenToolError) Error() string {
	return fmt.Sprintf("unknown tool %q", truncate.String(e.Tool))
}

// Unwrap returns the JSON-RPC error the client is sent: code -32602.
func (e *HiddenToolError) Unwrap() error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: e.Error()}
}

// The texts of the authorization errors. They are fixed, so that what a
// client sees never depends on (nor reveals) why: the reason goes to the
// server's log.
const (
	textDenied          = "not authorized (insufficient_scope)"
	textUnauthenticated = "not authenticated"
	textOutage          = "authorization service unavailable"
)

// DeniedError is toolroute's one refusal: an [Authorizer]'s of a route,
// and authz/permission's of capabilities (by a rule, a remembered answer
// or the user). Its text is "not authorized (insufficient_scope)", unless
// Text says otherwise.
type DeniedError struct {
	// Route is the route refused; the zero Route for a refusal of
	// capabilities.
	Route tool.Route
	// Subject is the caller's subject.
	Subject string
	// Reason says why, for the server's log; it is not part of the error's
	// text.
	Reason string
	// Text, if set, replaces the fixed text: for a refusal whose details
	// are the caller's own request, such as authz/permission's
	// "permission denied by the user: delete on item:7". An Authorizer
	// leaves it empty, so that what a client sees never tells why.
	Text string
}

// Error returns e.Text, or "not authorized (insufficient_scope)".
func (e *DeniedError) Error() string { return e.ClientText() }

// ClientText returns what Error returns: a tool's client is shown this
// text of an error that wraps e (an [http.Client]'s [*net/url.Error] of a
// request [Transport] refused, say), whatever else the error's text
// holds.
func (e *DeniedError) ClientText() string {
	if e.Text != "" {
		return e.Text
	}
	return textDenied
}

// UnauthenticatedError is the answer of an [Authorizer] that cannot tell
// who the caller is: no credential, or one the authorization service
// refuses (expired, malformed). Its text is always "not authenticated".
type UnauthenticatedError struct {
	// Reason says why, for the server's log; it is not part of the error's
	// text.
	Reason string
}

// Error returns "not authenticated".
func (e *UnauthenticatedError) Error() string { return textUnauthenticated }

// ClientText returns "not authenticated", the text a tool's client is
// shown of an error that wraps e (see [DeniedError.ClientText]).
func (e *UnauthenticatedError) ClientText() string { return textUnauthenticated }

// OutageError is the answer of an [Authorizer] that could not decide: the
// authorization service is unreachable, slow, or answers nonsense.
// Callers fail closed on it. Its text is always "authorization service
// unavailable"; the cause is Err.
type OutageError struct {
	// Err is the cause. It may hold the authorization service's address
	// but never the caller's bearer.
	Err error
}

// Error returns "authorization service unavailable".
func (e *OutageError) Error() string { return textOutage }

// ClientText returns "authorization service unavailable", the text a
// tool's client is shown of an error that wraps e (see
// [DeniedError.ClientText]); never its cause.
func (e *OutageError) ClientText() string { return textOutage }

// Unwrap returns e.Err, so that errors.Is(err, context.DeadlineExceeded)
// and the like see through an outage.
func (e *OutageError) Unwrap() error { return e.Err }
