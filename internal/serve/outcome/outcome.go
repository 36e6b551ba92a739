// Package outcome is the one classifier of how a tools/call ended: the
// server's log record of the call and its telemetry (the audit record's
// Outcome, the span's status) say the same thing because they read the
// same classification. Nothing here is API.
//
// The server classifies each call once, with [Of], where the call ends
// (its own context, after its deadline and shutdown are applied), and,
// for the observers that run outside it, leaves the answer in a
// [Record] they put in the request's context first ([WithRecord]):
// telemetry reads it there ([From]) rather than classify again, and
// classifies with [Of] itself only where no server did (a bare
// *mcp.Server).
package outcome

import (
	"context"
	"errors"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/call"
)

// Outcome is how a tools/call ended, in the words of the server's log
// record's "outcome" attribute (see [Outcome.String]).
type Outcome uint8

const (
	OK            Outcome = iota // the tool returned a result
	ToolError                    // an isError result
	Denied                       // authorization refused the call or an upstream request, or the tool is hidden
	Panic                        // the tool or a layer of the call path panicked
	Cancelled                    // client cancellation, deadline or shutdown
	UnknownTool                  // the server has no such tool
	Outage                       // the authorizer could not decide
	InputRequired                // the tool asks the client for input
	Error                        // any other protocol error
	RateLimited                  // the call was over its caller's rate limit (package ratelimit)
)

var names = [...]string{"ok", "tool_error", "denied", "panic", "cancelled", "unknown_tool", "outage", "input_required", "error", "rate_limited"}

// codeRateLimited is ratelimit.CodeRateLimited, the JSON-RPC error code
// of a call over its caller's rate limit. The classifier knows the code,
// not the package: the core links no rate limiter, and the code is what
// any limiter's answer carries to the client (the tests pin the two
// equal).
const codeRateLimited = -32010

// String returns the outcome's name: "ok", "tool_error", "denied",
// "panic", "cancelled", "unknown_tool", "outage", "input_required",
// "rate_limited" or "error".
func (o Outcome) String() string { return names[o] }

// Of tells how a tools/call that ended with res and err in ctx (the
// call's own context) ended, and why if not well: the error to log, the
// handler's own for an error shown to the client as a fixed
// "upstream request failed" (its text may show the upstream URL, which
// the server's log may).
//
// The rules, in order: a result asking for input is InputRequired, any
// other result that is not an error OK; then, of the call's error (the
// protocol error, else the isError result's): a panic is Panic; an ended
// ctx Cancelled; an authorization refusal (*authz.DeniedError,
// *authz.UnauthenticatedError) anywhere in the chain Denied; an
// *authz.OutageError Outage; an *authz.HiddenToolError Denied for a tool
// the server has, UnknownTool for one it has not (as is the SDK's own
// answer to an unknown name); a protocol error of code -32010
// (ratelimit.CodeRateLimited) RateLimited; any other protocol error
// Error; any other isError result ToolError.
func Of(ctx context.Context, res mcp.Result, err error) (Outcome, error) {
	var toolErr error
	if err == nil {
		r, _ := res.(*mcp.CallToolResult)
		switch {
		case r == nil:
			return OK, nil
		case r.NeedsInput():
			return InputRequired, nil
		case !r.IsError:
			return OK, nil
		}
		toolErr = r.GetError()
		if toolErr == nil {
			// An error result made without SetError: a HandleResult tool's.
			toolErr = errors.New("the tool returned an error result")
		}
	} else {
		toolErr = err
	}
	var (
		pe       *call.PanicError
		denied   *authz.DeniedError
		unauth   *authz.UnauthenticatedError
		outage   *authz.OutageError
		hidden   *authz.HiddenToolError
		rpc      *jsonrpc.Error
		upstream *call.UpstreamError
	)
	switch {
	case errors.As(toolErr, &pe):
		return Panic, toolErr
	case ctx.Err() != nil:
		return Cancelled, context.Cause(ctx)
	case errors.As(toolErr, &denied), errors.As(toolErr, &unauth):
		return Denied, toolErr
	case errors.As(toolErr, &outage):
		return Outage, toolErr
	case errors.As(toolErr, &hidden):
		if hidden.Exists {
			// A tool of the server's that answers like an unknown one is
			// hidden from this caller.
			return Denied, toolErr
		}
		return UnknownTool, toolErr
	case err != nil && errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeInvalidParams && strings.HasPrefix(rpc.Message, "unknown tool "):
		return UnknownTool, toolErr // the SDK's answer, where no authz middleware runs
	case err != nil && errors.As(err, &rpc) && rpc.Code == codeRateLimited:
		return RateLimited, toolErr
	case err != nil:
		return Error, toolErr
	case errors.As(toolErr, &upstream):
		return ToolError, upstream.Err
	}
	return ToolError, toolErr
}

// Record is a request's outcome as the server classified it, for the
// observers that run outside the call path. The zero Record has none.
type Record struct {
	outcome    Outcome
	set        bool
	deprecated bool
}

// SetDeprecated records that the call's tool is deprecated.
func (r *Record) SetDeprecated() { r.deprecated = true }

// Deprecated reports whether the call's tool is deprecated (as the
// server knows it: false where no server recorded it).
func (r *Record) Deprecated() bool { return r.deprecated }

// Set records o. The server sets a call's Record once, before the call's
// answer returns through the observers.
func (r *Record) Set(o Outcome) { r.outcome, r.set = o, true }

// Get returns the recorded outcome; ok is false if none was recorded
// (the request was no tools/call the server classified).
func (r *Record) Get() (o Outcome, ok bool) { return r.outcome, r.set }

type recordKey struct{}

// WithRecord returns ctx carrying a fresh Record, and the Record.
func WithRecord(ctx context.Context) (context.Context, *Record) {
	r := new(Record)
	return context.WithValue(ctx, recordKey{}, r), r
}

// From returns the Record ctx carries, or nil.
func From(ctx context.Context) *Record {
	r, _ := ctx.Value(recordKey{}).(*Record)
	return r
}
