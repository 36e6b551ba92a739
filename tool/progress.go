package tool

import (
	"context"
	"errors"
	"math"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// callState is the per-call state behind [Progress] and [Heartbeat]: the
// last progress value sent, and whether the call has ended. It is created
// by [BeginCall] for each call; the [Call] beside it is shared by every
// call of a tool.
type callState struct {
	mu    sync.Mutex // held while a notification is sent: sends are ordered
	ended bool
	sent  bool    // a progress notification was sent
	last  float64 // the progress value of the last one
	total float64 // its total (0: unknown)
}

type stateKey struct{}

// errNoCall is Progress's error outside a call begun with BeginCall.
var errNoCall = errors.New("tool: Progress or Heartbeat outside a call begun with tool.BeginCall (install the tool with a registry)")

// BeginCall begins one invocation of a tool: it returns a copy of ctx
// carrying c (see [CallFromContext]) and the call's progress state (see
// [Progress]), and a function end that ends the call. After end returns,
// Progress and Heartbeat send nothing for the call; end waits for a
// notification being sent to finish, and may be called more than once.
// Call end when the call's result is ready, before it is sent.
//
// If ctx already carries the state of a call that has not ended, begun
// by an outer layer (the server's tools/call middleware begins every
// call with a progress token, with a nil c, to report liveness), the
// returned context shares that state and end does nothing: the outer
// layer ends the call. This keeps progress increasing when the SDK runs a
// handler twice in one call (a multi-round-trip request converted for an
// older client). c may be nil: the context then carries no [Call].
//
// The registry's wrapper calls BeginCall for every call; tool authors
// need not.
func BeginCall(ctx context.Context, c *Call) (context.Context, func()) {
	if st, ok := ctx.Value(stateKey{}).(*callState); ok && !st.isEnded() {
		if c != nil {
			ctx = WithCall(ctx, c)
		}
		return ctx, func() {}
	}
	st := new(callState)
	ctx = context.WithValue(ctx, stateKey{}, st)
	if c != nil {
		ctx = WithCall(ctx, c)
	}
	return ctx, st.end
}

func (st *callState) isEnded() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.ended
}

func (st *callState) end() {
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
}

// Progress reports a tool call's progress to its client: done of total
// units (total 0, negative or not finite: unknown), with an optional
// human-readable message. It sends a notifications/progress only when the
// client asked for progress (gave a progress token in the request's
// _meta); otherwise it does nothing.
//
// Progress values must increase, as MCP requires: a done that is not
// greater than the last value sent for the call (by Progress or
// [Heartbeat]), or not finite, is dropped. So is every report after the
// call has ended: a handler's goroutine that outlives its call sends
// nothing. Reports are sent in order, one at a time.
//
// ctx must be the handler's context (or derived from it): it carries the
// call's state, put there by the registry's wrapper ([BeginCall]), and
// the request it belongs to, which the HTTP transport needs to route the
// notification. Outside a call begun with BeginCall, Progress sends
// nothing and returns an error.
//
// Progress returns only a failure to send (a closed connection, an
// ended request); a report dropped by the rules above returns nil. A
// failure to report progress need not fail the call.
func Progress(ctx context.Context, req *mcp.CallToolRequest, done, total float64, message string) error {
	if math.IsNaN(total) || math.IsInf(total, 0) || total < 0 {
		total = 0
	}
	return notify(ctx, req, message, func(st *callState) (float64, float64, bool) {
		if math.IsNaN(done) || math.IsInf(done, 0) || (st.sent && done <= st.last) {
			return 0, 0, false
		}
		return done, total, true
	})
}

// Heartbeat tells a tool call's client that the call is still running,
// without reporting progress: it sends the call's last progress value
// (0 if none was sent yet) raised by the smallest representable amount,
// with the last total (omitted if the raised value exceeds it) and
// message. It sends nothing when the client gave no progress token or
// the call has ended, and returns as [Progress] does.
//
// Raising the value minimally keeps the progress values increasing, as
// MCP requires, while leaving the scale to the tool's own reports: a
// tool's next real report is still greater. The liveness reports of
// toolroute's server (its Options.ProgressInterval) are heartbeats.
func Heartbeat(ctx context.Context, req *mcp.CallToolRequest, message string) error {
	return notify(ctx, req, message, func(st *callState) (float64, float64, bool) {
		v := 0.0
		if st.sent {
			v = math.Nextafter(st.last, math.Inf(1))
		}
		if math.IsInf(v, 0) {
			return 0, 0, false
		}
		total := st.total
		if v > total {
			total = 0
		}
		return v, total, true
	})
}

// notify sends one progress notification for req's call, with the value
// and total next decides under the call's lock (ok false: send nothing).
func notify(ctx context.Context, req *mcp.CallToolRequest, message string, next func(*callState) (value, total float64, ok bool)) error {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	st, _ := ctx.Value(stateKey{}).(*callState)
	if st == nil {
		return errNoCall
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return nil
	}
	v, total, ok := next(st)
	if !ok {
		return nil
	}
	st.sent, st.last, st.total = true, v, total
	return req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
		ProgressToken: token,
		Progress:      v,
		Total:         total,
		Message:       message,
	})
}
