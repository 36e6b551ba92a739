package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport is the transport of [ServeIO] and [StdioIO]: the SDK's
// newline-delimited transport over r and w, except that a call the client
// cancelled (notifications/cancelled) gets no response. The SDK answers
// every call, a cancelled one with its handler's error; MCP says the
// receiver of a cancellation should not answer, and the client has
// forgotten the call anyway.
//
// A line that is not a JSON-RPC message, or a batch the SDK could not
// take, is answered with an error and dropped (see [lineGuard]) instead
// of ending the session.
//
// A response that completes a JSON-RPC batch is always sent: once a client
// sent a batch (protocols before 2025-06-18), nothing is suppressed on
// its connection, since a missing response would hold back the whole
// batch's answer.
func stdioTransport(r io.ReadCloser, w io.WriteCloser) mcp.Transport {
	st := &cancelState{inflight: map[jsonrpc.ID]bool{}, changed: make(chan struct{})}
	lw := &lockedWriter{w: w}
	in := &batchSpotter{ReadCloser: newLineGuard(r, lw, st), st: st}
	return &quietTransport{base: &mcp.IOTransport{Reader: in, Writer: lw}, st: st}
}

// cancelState is shared by a stdio connection's reader and its
// connection wrapper.
type cancelState struct {
	batches atomic.Bool // the client sent a batch

	mu       sync.Mutex
	inflight map[jsonrpc.ID]bool // calls passed to the SDK and not answered; true once cancelled
	received int64               // messages the SDK has read
	closed   bool                // the connection was closed
	changed  chan struct{}       // closed and replaced at every change of the above
}

// changedLocked wakes [cancelState.settle]; st.mu must be held.
func (st *cancelState) changedLocked() {
	close(st.changed)
	st.changed = make(chan struct{})
}

// pass records the call id as in flight: [lineGuard] passes it to the
// SDK.
func (st *cancelState) pass(id jsonrpc.ID) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if _, ok := st.inflight[id]; !ok {
		st.inflight[id] = false
	}
}

// passBatch records the call ids of a batch as in flight, and reports
// true; or false, recording nothing, if one of them is in flight already.
// The SDK ends the session at a batch that reuses the id of a batch call
// in flight, and never answers one that reuses the id of another call in
// flight.
func (st *cancelState) passBatch(ids []jsonrpc.ID) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, id := range ids {
		if _, ok := st.inflight[id]; ok {
			return false
		}
	}
	for _, id := range ids {
		st.inflight[id] = false
	}
	return true
}

// settle blocks until the SDK has read the delivered messages (when no
// batch was seen: a batch line holds several) and answered every call,
// or the connection is closed. When a stdio client closes its input
// after its last request, the answers to its requests still reach it.
func (st *cancelState) settle(delivered int64) {
	for {
		st.mu.Lock()
		done := st.closed || (len(st.inflight) == 0 && (st.batches.Load() || st.received >= delivered))
		ch := st.changed
		st.mu.Unlock()
		if done {
			return
		}
		<-ch
	}
}

type quietTransport struct {
	base mcp.Transport
	st   *cancelState
}

func (t *quietTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &quietConn{Connection: c, st: t.st}, nil
}

type quietConn struct {
	mcp.Connection
	st *cancelState
}

func (c *quietConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if m != nil {
		defer func() {
			c.st.mu.Lock()
			c.st.received++
			c.st.changedLocked()
			c.st.mu.Unlock()
		}()
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok {
		return m, err
	}
	switch {
	case req.IsCall():
		c.st.mu.Lock()
		if _, ok := c.st.inflight[req.ID]; !ok {
			c.st.inflight[req.ID] = false // lineGuard records it first
		}
		c.st.mu.Unlock()
	case req.Method == "notifications/cancelled":
		var p mcp.CancelledParams
		if json.Unmarshal(req.Params, &p) != nil {
			break
		}
		id, idErr := jsonrpc.MakeID(p.RequestID)
		if idErr != nil {
			break
		}
		c.st.mu.Lock()
		if _, ok := c.st.inflight[id]; ok {
			c.st.inflight[id] = true
		}
		c.st.mu.Unlock()
	}
	return m, err
}

func (c *quietConn) Write(ctx context.Context, m jsonrpc.Message) error {
	if resp, ok := m.(*jsonrpc.Response); ok && resp.ID.IsValid() {
		c.st.mu.Lock()
		cancelled := c.st.inflight[resp.ID]
		c.st.mu.Unlock()
		if cancelled && !c.st.batches.Load() {
			c.answered(resp.ID)
			return nil
		}
		defer c.answered(resp.ID) // after the write: settle then lets the input end
	}
	return c.Connection.Write(ctx, m)
}

func (c *quietConn) answered(id jsonrpc.ID) {
	c.st.mu.Lock()
	delete(c.st.inflight, id)
	c.st.changedLocked()
	c.st.mu.Unlock()
}

func (c *quietConn) Close() error {
	c.st.mu.Lock()
	c.st.closed = true
	c.st.changedLocked()
	c.st.mu.Unlock()
	return c.Connection.Close()
}

// batchSpotter notices a JSON-RPC batch (a line starting with "[") in the
// byte stream before the SDK decodes it. One goroutine reads.
type batchSpotter struct {
	io.ReadCloser
	st      *cancelState
	midLine bool
}

func (b *batchSpotter) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	buf := p[:n]
	for len(buf) > 0 {
		if !b.midLine {
			i := 0
			for i < len(buf) && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r') {
				i++
			}
			if i == len(buf) {
				break
			}
			switch buf[i] {
			case '\n':
				buf = buf[i+1:]
				continue
			case '[':
				b.st.batches.Store(true)
			}
			b.midLine = true
			buf = buf[i:]
		}
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			break
		}
		b.midLine = false
		buf = buf[nl+1:]
	}
	return n, err
}

// errRequestEnded is the cause of a call's context ending because its
// stateless HTTP request ended (the client went away).
var errRequestEnded = errors.New("server: the HTTP request of the call ended")

type requestKey struct{}

// bindCalls ties every call a stateless HTTP request carries to the
// request: when the request ends, the call is cancelled, whatever the
// protocol version. The SDK does so only for 2026-07-28 requests
// (StreamableHTTPOptions.PropagateRequestCancellation); a stateless
// 2025 request's answer can be delivered only on its own request as
// well, so once the client has gone, nothing is lost by stopping.
func bindCalls(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, r.Context())))
	})
}

// boundRequest returns the context of the stateless HTTP request a call
// came in, or nil.
func boundRequest(ctx context.Context) context.Context {
	rc, _ := ctx.Value(requestKey{}).(context.Context)
	return rc
}

// quietSessions does for stateful HTTP sessions what [stdioTransport]
// does for stdio: a call the client cancelled (notifications/cancelled)
// gets no response. The SDK would write its handler's error on the
// call's stream, which a client may still be reading.
//
// It sees every POST of a session before the SDK does: a cancellation is
// recorded before the SDK cancels the handler, so the response the
// handler then returns is known to be unwanted when it is written. Only
// requests of one message are followed; a call that came in a JSON-RPC
// batch is always answered (see [stdioTransport]).
type quietSessions struct {
	next  http.Handler
	limit int64 // the body size limit the SDK applies

	mu       sync.Mutex
	inflight map[quietCall]bool // calls being served; true once cancelled
}

// quietCall is a call of a stateful session, as its caller sees it: a
// cancellation from another caller (who would have to know the session's
// id) never matches, as the SDK refuses it.
type quietCall struct {
	session, user string
	id            jsonrpc.ID
}

func quietCancelled(next http.Handler, limit int64) http.Handler {
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return &quietSessions{next: next, limit: limit, inflight: map[quietCall]bool{}}
}

func (q *quietSessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get("Mcp-Session-Id")
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	if r.Method != http.MethodPost || session == "" {
		q.next.ServeHTTP(w, r)
		return
	}
	// Read what the SDK will read (it refuses a larger body), and give it
	// the same bytes.
	body, _ := io.ReadAll(io.LimitReader(r.Body, q.limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
	var msg struct {
		ID     any             `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &msg) != nil || msg.Method == "" {
		q.next.ServeHTTP(w, r)
		return
	}
	if msg.ID == nil {
		var p mcp.CancelledParams
		if msg.Method == "notifications/cancelled" && json.Unmarshal(msg.Params, &p) == nil {
			if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
				q.mu.Lock()
				c := quietCall{session, user, id}
				if _, ok := q.inflight[c]; ok {
					q.inflight[c] = true
				}
				q.mu.Unlock()
			}
		}
		q.next.ServeHTTP(w, r)
		return
	}
	id, err := jsonrpc.MakeID(msg.ID)
	c := quietCall{session, user, id}
	q.mu.Lock()
	_, dup := q.inflight[c]
	if err == nil && !dup {
		q.inflight[c] = false
	}
	q.mu.Unlock()
	if err != nil || dup {
		q.next.ServeHTTP(w, r) // the SDK refuses it
		return
	}
	defer func() {
		q.mu.Lock()
		delete(q.inflight, c)
		q.mu.Unlock()
	}()
	q.next.ServeHTTP(&quietWriter{ResponseWriter: w, q: q, call: c}, r)
}

// quietWriter drops the response to its call, once the call is
// cancelled, from the call's event stream. The SDK writes each event in
// one Write.
type quietWriter struct {
	http.ResponseWriter
	q    *quietSessions
	call quietCall
}

func (w *quietWriter) Write(p []byte) (int, error) {
	w.q.mu.Lock()
	cancelled := w.q.inflight[w.call]
	w.q.mu.Unlock()
	if cancelled && isResponseEvent(p, w.call.id) {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController flush the stream.
func (w *quietWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isResponseEvent reports whether the server-sent event p carries the
// response to the call id.
func isResponseEvent(p []byte, id jsonrpc.ID) bool {
	for line := range bytes.Lines(p) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		var m struct {
			ID     any    `json:"id"`
			Method string `json:"method"`
		}
		if json.Unmarshal(data, &m) != nil || m.Method != "" || m.ID == nil {
			return false
		}
		got, err := jsonrpc.MakeID(m.ID)
		return err == nil && got == id
	}
	return false
}
