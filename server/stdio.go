package server

import (
	"context"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/sdkfix/quietcancel"
	"github.com/toolroute/toolroute/internal/sdkfix/stdioguard"
	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// StdioServer serves an MCP server over one newline-delimited JSON-RPC
// stream, usually standard input and output. Callers are
// [Options.Caller].
//
// A line that is not a JSON-RPC message, or a batch that is not valid (or
// comes from a client of protocol 2025-06-18 or later, which has no
// batches), is answered with a JSON-RPC error and dropped; the session
// goes on. A call the client cancels (notifications/cancelled) has its
// handler's context cancelled and gets no response. When the client
// closes its input, the answers to the calls it sent are still written.
//
// It must be created with [NewStdioServer], and serves once.
type StdioServer struct {
	server    *mcp.Server
	transport mcp.Transport
	calls     *drain                        // the tool calls, as the middleware sees them
	read      *inflight.Tracker[jsonrpc.ID] // the calls read and not yet answered

	stop     chan struct{} // closed by Shutdown: close the session
	stopOnce sync.Once
	served   context.Context // done when Serve returns
	finish   context.CancelFunc

	mu      sync.Mutex
	serving bool // Serve was called
	shut    bool // Shutdown was called
}

// NewStdioServer returns a server of s that reads requests from r and
// writes responses to w.
func NewStdioServer(s *mcp.Server, r io.ReadCloser, w io.WriteCloser) *StdioServer {
	read := inflight.New[jsonrpc.ID]()
	g := stdioguard.New(r, w, read)
	qr, qw := quietcancel.Stdio(g.Reader(), g.Writer(), read)
	served, finish := context.WithCancel(context.Background())
	return &StdioServer{
		server:    s,
		transport: &mcp.IOTransport{Reader: qr, Writer: qw},
		calls:     newDrain(),
		read:      read,
		stop:      make(chan struct{}),
		served:    served,
		finish:    finish,
	}
}

// Serve serves until the client closes its input (Serve then returns
// nil), [StdioServer.Shutdown] is called (nil too), or ctx is done:
// requests in flight are then cancelled (their context's cause is
// [ErrShuttingDown]), the session is closed, and Serve returns ctx's
// error.
func (ss *StdioServer) Serve(ctx context.Context) error {
	if ss.server == nil {
		return errors.New("server: StdioServer of a nil *mcp.Server")
	}
	ss.mu.Lock()
	switch {
	case ss.serving:
		ss.mu.Unlock()
		return errors.New("server: StdioServer served twice")
	case ss.shut:
		ss.mu.Unlock()
		return errors.New("server: StdioServer served after Shutdown")
	}
	ss.serving = true
	ss.mu.Unlock()
	defer ss.finish()
	defer context.AfterFunc(ctx, ss.calls.Abort)()
	session, err := ss.server.Connect(withTransport(ctx, &transport{drain: ss.calls}), ss.transport, nil)
	if err != nil {
		return err
	}
	waited := make(chan error, 1)
	go func() { waited <- session.Wait() }()
	select {
	case err := <-waited:
		if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe)) {
			// The client closed its end: a normal end of the session.
			return nil
		}
		return err
	case <-ctx.Done():
		ss.calls.Close()
		ss.answerAborted()
		session.Close()
		<-waited
		return ctx.Err()
	case <-ss.stop:
		session.Close()
		<-waited
		return nil
	}
}

// answerAborted waits, once the requests in flight are cancelled, for
// their answers (their errors) to be written, for at most abortGrace, or
// until Serve returns: closing the session drops what is not written.
func (ss *StdioServer) answerAborted() {
	grace, cancel := context.WithTimeout(ss.served, abortGrace)
	defer cancel()
	ss.read.Wait(grace)
}

// Shutdown stops the server gracefully: it refuses new tool calls (they
// fail with [ErrShuttingDown]), waits until every call read is answered,
// then cancels whatever request still runs, closes the session and waits
// for [StdioServer.Serve] to return. When ctx is done first, the requests
// still running are cancelled (their context's cause is
// [ErrShuttingDown]), the session is closed once they return, and
// Shutdown returns ctx's error at once, even if a handler ignores its
// context (the answers of the cancelled calls, their errors, are written
// first, for at most a second). A client that left first leaves nothing
// to wait for.
func (ss *StdioServer) Shutdown(ctx context.Context) error {
	ss.calls.Close()
	ss.mu.Lock()
	serving := ss.serving
	ss.shut = true
	ss.mu.Unlock()
	if !serving {
		return nil
	}
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(ss.served, cancel)()
	err := ss.read.Wait(wait)
	ended := ss.served.Err() != nil
	// What still runs (a tools/list, say) would hold the session's Close.
	ss.calls.Abort()
	if err != nil && !ended {
		ss.answerAborted()
	}
	ss.stopOnce.Do(func() { close(ss.stop) })
	switch {
	case ended:
		return nil
	case err != nil:
		return err
	}
	select {
	case <-ss.served.Done():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
