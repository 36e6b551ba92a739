package server

import (
	"context"
	"errors"
	"io"
	"os"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeStdio serves s over the process's standard input and output (one
// JSON-RPC message a line) until the client closes its end or ctx is
// done. Callers are [Options.Caller]. Log to standard error only.
func ServeStdio(ctx context.Context, s *mcp.Server) error {
	return ServeIO(ctx, s, os.Stdin, os.Stdout)
}

// ServeIO serves s over one newline-delimited JSON-RPC stream: it reads
// requests from r and writes responses to w, until the client closes r
// (ServeIO then returns nil) or ctx is done (in-flight requests are
// cancelled, the session is closed, and ServeIO returns ctx's error).
// A line that is not a JSON-RPC message, or a batch that is not valid, is
// answered with a JSON-RPC error and dropped; the session goes on.
// Callers are [Options.Caller]. A call the client cancels
// (notifications/cancelled) has its handler's context cancelled and gets
// no response. For a graceful stop that lets in-flight calls finish, use
// [StdioIO] under fx.
func ServeIO(ctx context.Context, s *mcp.Server, r io.ReadCloser, w io.WriteCloser) error {
	d := newDrain()
	stop := context.AfterFunc(ctx, d.cancel)
	defer stop()
	return serveIO(ctx, s, stdioTransport(r, w), d)
}

// serveIO serves until the client leaves or ctx is done; then it closes
// the session. The SDK's session Close drops the responses of calls still
// in flight: stop gracefully by waiting for a [countingTransport] first.
func serveIO(ctx context.Context, s *mcp.Server, t mcp.Transport, d *drain) error {
	if s == nil {
		return errors.New("server: ServeIO of a nil *mcp.Server")
	}
	ss, err := s.Connect(withDrain(ctx, d), t, nil)
	if err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- ss.Wait() }()
	select {
	case err := <-waited:
		if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)) {
			// The client closed its end: a normal end of the session.
			return nil
		}
		return err
	case <-ctx.Done():
		d.close()
		ss.Close()
		<-waited
		return ctx.Err()
	}
}

// countingTransport wraps a transport's connection to follow the calls
// read and not yet answered, so that a graceful stop can wait until every
// in-flight call's response is written before it closes the session.
//
// It follows their ids, not their number: the SDK drops, unanswered, a
// request whose id is that of a call in flight.
//
// The wrapper hides the connection's unexported methods from the SDK;
// for an io connection that only disables the SDK's refusal of JSON-RPC
// batches from clients of protocol 2025-06-18 and later.
type countingTransport struct {
	base mcp.Transport

	mu      sync.Mutex
	pending map[jsonrpc.ID]struct{} // calls read and not yet answered
	zero    chan struct{}           // if non-nil, closed when pending empties
}

func (t *countingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Connection: c, t: t}, nil
}

// answered waits until every call read so far is answered, or ctx is
// done.
func (t *countingTransport) answered(ctx context.Context) error {
	t.mu.Lock()
	if len(t.pending) == 0 {
		t.mu.Unlock()
		return nil
	}
	if t.zero == nil {
		t.zero = make(chan struct{})
	}
	zero := t.zero
	t.mu.Unlock()
	select {
	case <-zero:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

type countingConn struct {
	mcp.Connection
	t *countingTransport
}

func (c *countingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() {
		c.t.mu.Lock()
		if c.t.pending == nil {
			c.t.pending = map[jsonrpc.ID]struct{}{}
		}
		c.t.pending[req.ID] = struct{}{}
		c.t.mu.Unlock()
	}
	return m, err
}

func (c *countingConn) Write(ctx context.Context, m jsonrpc.Message) error {
	err := c.Connection.Write(ctx, m)
	if resp, ok := m.(*jsonrpc.Response); ok {
		c.t.mu.Lock()
		delete(c.t.pending, resp.ID)
		if len(c.t.pending) == 0 && c.t.zero != nil {
			close(c.t.zero)
			c.t.zero = nil
		}
		c.t.mu.Unlock()
	}
	return err
}
