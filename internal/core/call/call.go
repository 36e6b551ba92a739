// Package call holds what tool, registry, server and authz share about
// one tool call: the tool it belongs to, its progress state, and the
// errors of the call path (a recovered panic, an error shown to the
// client by a text of its own). Nothing here is API.
//
// A call is begun once, by the one layer that owns it: the server's
// chain under server.New (whose installers add tools with
// registry.AddTools), the registry's middleware on a bare *mcp.Server
// (registry.Install). Neither looks for the other. [Begin] puts the call
// in the context; [From] reads it back.
package call

import (
	"context"
	"errors"
	"math"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is what every call of one tool shares, and the value a call's
// context carries under [Key]: one built per tool and server (or
// registry installation) for calls without progress state, and a copy
// with a fresh [State] for a call whose client sent a progress token.
//
// I is the type of the tool's description, tool.Call (this package
// cannot import tool, which imports it); every layer uses that one type.
type Tool[I any] struct {
	// Info describes the tool.
	Info *I

	st *State // nil: no progress token
}

// State returns t's progress state: nil for a call whose client asked no
// progress (and for the Tool a call of it is begun from).
func (t *Tool[I]) State() *State { return t.st }

// state is what [Notify] asks of a context's call, whatever its I.
func (t *Tool[I]) state() *State { return t.st }

// State is one call's progress state: the last progress value sent, and
// whether the call has ended. It exists only for a call whose client
// sent a progress token.
type State struct {
	mu    sync.Mutex // held while a notification is sent: sends are ordered
	ended bool
	sent  bool    // a progress notification was sent
	last  float64 // the progress value of the last one
	total float64 // its total (0: unknown)
}

// Key is the context key a call's context carries its *[Tool] under: a
// context type of the server's own may answer it (see [New]).
type Key struct{}

// progressCall is a call with progress state, in one allocation.
type progressCall[I any] struct {
	t  Tool[I]
	st State
}

// New begins a call of t: it returns what the call's context carries
// under [Key] (t itself, without a progress token in req; with one, a
// copy of t with a fresh [State], which end ends). A call is begun once,
// by the outermost layer running it.
func New[I any](t *Tool[I], req *mcp.CallToolRequest) (c *Tool[I], end func()) {
	if req == nil || req.Params == nil || req.Params.GetProgressToken() == nil {
		return t, nop // not a func literal: in a generic function, one captures its dictionary, and costs an allocation
	}
	p := &progressCall[I]{t: *t}
	p.t.st = &p.st
	return &p.t, p.st.End
}

func nop() {}

// Begin is [New], returning ctx with the call in it.
func Begin[I any](ctx context.Context, t *Tool[I], req *mcp.CallToolRequest) (_ context.Context, end func()) {
	c, end := New(t, req)
	return context.WithValue(ctx, Key{}, c), end
}

// With returns ctx carrying t (without progress state, unless t is a
// call begun with [New]), for tests of code that reads the call.
func With[I any](ctx context.Context, t *Tool[I]) context.Context {
	return context.WithValue(ctx, Key{}, t)
}

// From returns the call ctx belongs to, nil outside a call (or in a call
// whose description is not an I).
func From[I any](ctx context.Context) *Tool[I] {
	t, _ := ctx.Value(Key{}).(*Tool[I])
	return t
}

// stateFrom returns the progress state of ctx's call, or nil.
func stateFrom(ctx context.Context) *State {
	c, _ := ctx.Value(Key{}).(interface{ state() *State })
	if c == nil {
		return nil
	}
	return c.state()
}

// End ends the call: later notifications send nothing. It waits for a
// notification being sent, and may be called more than once.
func (st *State) End() {
	st.mu.Lock()
	st.ended = true
	st.mu.Unlock()
}

// ErrNoCall is the error of a progress report outside a call.
var ErrNoCall = errors.New("tool: Progress outside a tool call (install the tool with a registry, and pass the handler's context)")

// Notify sends one progress notification for req's call, with the value
// and total next decides under the call's lock (ok false: send nothing).
// It sends nothing when the client gave no progress token or the call
// has ended.
func Notify(ctx context.Context, req *mcp.CallToolRequest, message string, next func(sent bool, last, total float64) (value, newTotal float64, ok bool)) error {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	st := stateFrom(ctx)
	if st == nil {
		return ErrNoCall
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.ended {
		return nil
	}
	v, total, ok := next(st.sent, st.last, st.total)
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

// Heartbeat tells a call's client that the call is still running: it
// sends the call's last progress value (0 if none was sent yet) raised by
// the smallest representable amount, with the last total (omitted if the
// raised value exceeds it) and message. The tool's next real report is
// still greater.
func Heartbeat(ctx context.Context, req *mcp.CallToolRequest, message string) error {
	return Notify(ctx, req, message, func(sent bool, last, total float64) (float64, float64, bool) {
		v := 0.0
		if sent {
			v = math.Nextafter(last, math.Inf(1))
		}
		if math.IsInf(v, 0) {
			return 0, 0, false
		}
		if v > total {
			total = 0
		}
		return v, total, true
	})
}

// PanicError is the error a call that panicked ends with: Tool names the
// tool ("" for a panic outside a tool call), Value is what was panicked
// with, Stack the panicking goroutine's stack. Its message is generic:
// the panic value and stack go to the server's log only.
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
}

// Error returns a generic text that tells nothing of the panic value.
func (e *PanicError) Error() string {
	return "internal error: the tool failed unexpectedly; the failure was logged"
}

// UpstreamError is what a client sees of an error that would show it an
// upstream request's URL (a *url.Error's text): a fixed text. Err is the
// handler's error, for the server's log.
type UpstreamError struct{ Err error }

// Error returns "upstream request failed".
func (e *UpstreamError) Error() string { return "upstream request failed" }

// Unwrap returns e.Err.
func (e *UpstreamError) Unwrap() error { return e.Err }

// ClientTexter is an error whose text for a tool's client is its
// ClientText, whatever wraps it: authz's refusals, whose texts are fixed
// and tell nothing of why.
type ClientTexter interface {
	ClientText() string
}

// ShownError is what a client sees of an error whose chain holds a
// [ClientTexter]: its ClientText. Err is the handler's error, for the
// server's log and classification (it unwraps to it).
type ShownError struct {
	Text string
	Err  error
}

// Error returns e.Text.
func (e *ShownError) Error() string { return e.Text }

// Unwrap returns e.Err.
func (e *ShownError) Unwrap() error { return e.Err }

// ClientError returns the error a tool's client is shown for a handler's
// err: for a [ClientTexter] anywhere in err's chain (the first one), a
// [ShownError] of its text; else, if err's text shows an upstream
// request's URL (it wraps a *url.Error, as an http.Client's errors do),
// an [UpstreamError]; else err.
func ClientError(err error) error {
	if err == nil {
		return nil
	}
	var ct ClientTexter
	if errors.As(err, &ct) {
		return &ShownError{Text: ct.ClientText(), Err: err}
	}
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" && strings.Contains(err.Error(), ue.URL) {
		return &UpstreamError{Err: err}
	}
	return err
}
