package server

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// transport is what a transport tells the call path about the requests
// it serves, beyond what the SDK carries: the drain its calls are
// counted in, and for a stateless HTTP request, the request its calls
// end with. The zero value (nothing: an in-memory session, or a
// transport of the caller's own) asks nothing of the call path.
//
// Who puts it there: the transports, in the context they hand to the
// SDK ([withTransport]) — [bindCalls] for each stateless HTTP request,
// [newHTTPHandler] for the requests of stateful sessions, and
// [StdioServer] for its session (the SDK runs a session's handlers on
// the context given to Connect). Who reads it: [chain.serve] alone,
// once per request ([transportFrom]), which hands it to [chain.call].
// The context is the only way through the SDK from a transport to the
// middleware; this one typed value is the whole of what crosses it.
type transport struct {
	// drain, if not nil, is the transport's tool calls in flight (see
	// [drain]).
	drain *drain
	// request, if not nil, is the stateless HTTP request the calls came
	// in (see [boundRequest]).
	request *boundRequest
}

type transportKey struct{}

// withTransport returns ctx carrying t, for the call path.
func withTransport(ctx context.Context, t *transport) context.Context {
	return context.WithValue(ctx, transportKey{}, t)
}

// transportFrom returns the transport ctx carries; the zero value if
// none.
func transportFrom(ctx context.Context) transport {
	if t, _ := ctx.Value(transportKey{}).(*transport); t != nil {
		return *t
	}
	return transport{}
}

// drain is a transport's tool calls in flight, so that shutdown can stop
// admitting calls (Close), wait for the running ones (Wait), and then
// cancel them and every other request still running (Abort: see
// [chain.serve]).
type drain = inflight.Tracker[*mcp.CallToolRequest]

func newDrain() *drain { return inflight.New[*mcp.CallToolRequest]() }
