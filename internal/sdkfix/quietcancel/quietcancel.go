// Package quietcancel works around go-sdk issues #1235 and #1259 (fix
// proposed in go-sdk PR #1267, open at v1.8.0): the SDK answers a call
// the client cancelled (notifications/cancelled) with its handler's
// error, on every transport. MCP says the receiver of a cancellation
// should not answer it (2026-07-28: must not send any further message for
// it); the client has forgotten the call.
//
// [Stdio] drops those responses from a stdio connection's output, [HTTP]
// from a stateful streamable HTTP session's event streams. Both work below
// the SDK (on bytes and on HTTP), wrapping no SDK connection.
//
// A response that completes a JSON-RPC batch is always sent: once a client
// sent a batch (protocols before 2025-06-18), nothing is dropped on its
// connection, since a missing response would hold back the whole batch's
// answer.
//
// Delete this package when TestCanarySDKAnswersCancelledCall fails.
package quietcancel

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// Stdio wraps a stdio connection's input r and output w so that the
// response to a call calls marks cancelled is not written. Something
// else records the calls in calls and their cancellations (stdioguard
// does: it reads every line anyway); the returned writer removes a
// dropped call from calls. The returned reader notices batches.
func Stdio(r io.ReadCloser, w io.WriteCloser, calls *inflight.Tracker[jsonrpc.ID]) (io.ReadCloser, io.WriteCloser) {
	var batches atomic.Bool
	return &batchSpotter{ReadCloser: r, batches: &batches}, &writer{w: w, calls: calls, batches: &batches}
}

// writer drops the response lines to cancelled calls. It keeps a line
// until its end, so it depends on no write boundary.
type writer struct {
	w       io.WriteCloser
	calls   *inflight.Tracker[jsonrpc.ID]
	batches *atomic.Bool
	line    []byte // the current line, until its newline
}

// Write is called by one goroutine at a time (the SDK serialises its
// writes).
func (w *writer) Write(p []byte) (int, error) {
	w.line = append(w.line, p...)
	start := 0
	for {
		i := bytes.IndexByte(w.line[start:], '\n')
		if i < 0 {
			break
		}
		line := w.line[start : start+i+1]
		start += i + 1
		// Only a cancellation makes a line worth reading.
		if !w.batches.Load() && w.calls.AnyCancelled() && w.dropped(line) {
			continue
		}
		if _, err := w.w.Write(line); err != nil {
			w.line = w.line[:copy(w.line, w.line[start:])]
			return len(p), err
		}
	}
	w.line = w.line[:copy(w.line, w.line[start:])]
	return len(p), nil
}

// dropped reports whether line is the response to a cancelled call, and
// if so removes the call.
func (w *writer) dropped(line []byte) bool {
	id, ok := responseID(line)
	if !ok || !w.calls.Cancelled(id) {
		return false
	}
	w.calls.Done(id)
	return true
}

func (w *writer) Close() error { return w.w.Close() }

// responseID returns the id of the response msg, if it is one.
func responseID(msg []byte) (jsonrpc.ID, bool) {
	msg = bytes.TrimSpace(msg)
	if len(msg) == 0 || msg[0] != '{' {
		return jsonrpc.ID{}, false
	}
	m, err := jsonrpc.DecodeMessage(msg)
	resp, ok := m.(*jsonrpc.Response)
	if err != nil || !ok || !resp.ID.IsValid() {
		return jsonrpc.ID{}, false
	}
	return resp.ID, true
}

// batchSpotter notices a JSON-RPC batch (a line starting with "[") in the
// byte stream before the SDK decodes it. One goroutine reads.
type batchSpotter struct {
	io.ReadCloser
	batches *atomic.Bool
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
				b.batches.Store(true)
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

// HTTP wraps a stateful streamable HTTP handler so that a call the client
// cancelled gets no response on its event stream, where a client may
// still be reading. limit is the body size limit the SDK applies (0
// selects its default).
//
// It sees every POST of a session before the SDK does: a cancellation is
// recorded before the SDK cancels the handler, so the response the
// handler then returns is known to be unwanted when it is written. Only
// requests of one message are followed; a call that came in a JSON-RPC
// batch is always answered. A call is known by its session, its caller
// (the SDK's TokenInfo.UserID) and its id: a cancellation from another
// caller, which the SDK refuses, never matches.
func HTTP(next http.Handler, limit int64) http.Handler {
	if limit <= 0 {
		limit = mcp.DefaultMaxRequestBodyBytes
	}
	return &sessions{next: next, limit: limit, calls: inflight.New[call]()}
}

type sessions struct {
	next  http.Handler
	limit int64
	calls *inflight.Tracker[call]
}

// call is a call of a stateful session, as its caller sees it.
type call struct {
	session, user string
	id            jsonrpc.ID
}

func (q *sessions) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	session := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || session == "" {
		q.next.ServeHTTP(w, r)
		return
	}
	var user string
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
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
				q.calls.Cancel(call{session, user, id})
			}
		}
		q.next.ServeHTTP(w, r)
		return
	}
	id, err := jsonrpc.MakeID(msg.ID)
	c := call{session, user, id}
	if err != nil || !q.calls.Add(c) {
		q.next.ServeHTTP(w, r) // the SDK refuses it
		return
	}
	defer q.calls.Done(c)
	ew := &eventWriter{ResponseWriter: w, q: q, call: c}
	q.next.ServeHTTP(ew, r)
	ew.finish()
}

// eventWriter drops the response to its call, once the call is
// cancelled, from the call's event stream. It keeps an event until its
// end (a blank line), so it depends on no write boundary; other bodies
// pass through.
type eventWriter struct {
	http.ResponseWriter
	q     *sessions
	call  call
	event []byte // the current event, until its end
}

func (w *eventWriter) Write(p []byte) (int, error) {
	if !strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
		return w.ResponseWriter.Write(p)
	}
	w.event = append(w.event, p...)
	for {
		i := bytes.Index(w.event, []byte("\n\n"))
		if i < 0 {
			return len(p), nil
		}
		ev := w.event[:i+2]
		if !w.q.calls.Cancelled(w.call) || !isResponseEvent(ev, w.call.id) {
			if _, err := w.ResponseWriter.Write(ev); err != nil {
				return len(p), err
			}
		}
		w.event = w.event[:copy(w.event, w.event[i+2:])]
	}
}

// finish writes what is left of an event the handler did not end.
func (w *eventWriter) finish() {
	if len(w.event) > 0 {
		w.ResponseWriter.Write(w.event)
	}
}

// Unwrap lets http.ResponseController flush the stream. A flush comes
// after the end of an event, which Write has passed on by then.
func (w *eventWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// isResponseEvent reports whether the server-sent event p carries the
// response to the call id.
func isResponseEvent(p []byte, id jsonrpc.ID) bool {
	for line := range bytes.Lines(p) {
		data, ok := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data: "))
		if !ok {
			continue
		}
		got, ok := responseID(data)
		return ok && got == id
	}
	return false
}
