// Package stdioguard works around go-sdk issue #1209 (fix proposed in
// go-sdk PR #1210, open at v1.8.0): the SDK's newline-delimited transport
// (mcp.IOTransport, mcp.StdioTransport) ends the whole session at the first
// line that is not a JSON-RPC message, or at a batch it cannot take, losing
// every call in flight. Its decoder cannot resynchronise.
//
// [New] guards the byte streams below the SDK's framing: the SDK reads
// and writes through them as through any io.ReadCloser and io.WriteCloser,
// so no SDK connection is wrapped, and the SDK's optional connection
// methods (its unexported sessionUpdated, which refuses batches from
// clients of protocol 2025-06-18 and later) keep working.
//
// Delete this package when TestCanarySDKEndsSessionAtBadLine fails: the
// SDK then survives a bad line itself.
package stdioguard

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// firstNoBatches is the first protocol version that has no JSON-RPC
// batches; the SDK compares versions as strings too.
const firstNoBatches = "2025-06-18"

// hasBatches reports whether a client asking for protocol version v
// gets a version with JSON-RPC batches: v itself if the SDK supports it,
// else a later one. The SDK refuses batches, ending the session, from
// the moment it has answered initialize; the Guard refuses them, keeping
// the session, from the moment it reads initialize, so that the outcome
// does not depend on how far the SDK has read.
func hasBatches(v string) bool {
	return v < firstNoBatches && slices.Contains(mcp.SupportedProtocolVersions(), v)
}

// A Guard sits between a stdio client and the SDK's newline-delimited
// decoder. It answers a line that is not a JSON-RPC message itself, as
// JSON-RPC asks (-32700 parse error, -32600 invalid request, id null when
// it cannot be read), drops it, and passes every good message on, without
// the blanks around it (the SDK refuses anything but a newline after a
// message): one bad line costs nothing but its own error response. A line
// longer than [mcp.DefaultMaxLineLength] is refused the same way without
// being buffered whole.
//
// Batches ("[" lines) are checked too: the SDK ends the session at a batch
// it cannot take (see readBatch and ioConn.Read in the SDK's
// mcp/transport.go). A batch that is empty, has an element that is not a
// JSON-RPC message, repeats a request id, reuses the id of a call still in
// flight, or comes from a client of protocol 2025-06-18 or later (which
// has no batches) is answered with -32600 (id null) and dropped. The
// notifications of a good batch are passed on as lines of their own
// before the rest of it: the SDK tracks a batch's notifications as
// requests awaiting a response (under one empty id), so that a batch
// holding one would never be answered, and a second would end the
// session. JSON-RPC lets a batch's messages be processed in any order.
//
// Every call passed on is recorded in the Guard's calls as it is passed
// on, before the SDK reads it, and removed once its response is written;
// a client's notifications/cancelled marks it cancelled. At the end of the
// input, the Guard holds the end back until every call read is answered
// or cancelled, or the connection is closed: a client that writes its
// requests and closes its input still gets every answer.
type Guard struct {
	r     *bufio.Reader
	src   io.Closer
	out   *writer
	calls *inflight.Tracker[jsonrpc.ID]

	closed context.Context // done once the SDK closed the connection
	close  context.CancelFunc

	noBatches atomic.Bool // the client asked for a protocol without batches

	pending []byte // the rest of the current good line, for Read
	err     error  // the source's error, once every good line is out
}

// New guards a stdio connection that reads r and writes w. Give the SDK
// [Guard.Reader] and [Guard.Writer] (mcp.IOTransport). calls is where the
// calls in flight are followed; it must not be shared with another
// connection.
func New(r io.ReadCloser, w io.WriteCloser, calls *inflight.Tracker[jsonrpc.ID]) *Guard {
	closed, close := context.WithCancel(context.Background())
	g := &Guard{r: bufio.NewReaderSize(r, 64<<10), src: r, calls: calls, closed: closed, close: close}
	g.out = &writer{w: w, g: g}
	return g
}

// Reader returns the guarded input, for the SDK.
func (g *Guard) Reader() io.ReadCloser { return reader{g} }

// Writer returns the output, for the SDK: it serialises the SDK's
// messages and the Guard's answers, and follows the responses written.
func (g *Guard) Writer() io.WriteCloser { return g.out }

type reader struct{ g *Guard }

func (r reader) Close() error {
	r.g.close()
	return r.g.src.Close()
}

func (r reader) Read(p []byte) (int, error) {
	g := r.g
	for len(g.pending) == 0 {
		if g.err != nil {
			g.calls.WaitCancelled(g.closed)
			return 0, g.err
		}
		g.pending, g.err = g.readLine()
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns what to pass on for the next line (one or more
// messages, each on a line of its own), nil for a line that was answered
// and dropped (or blank), and the source's error.
func (g *Guard) readLine() ([]byte, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		if len(line)+len(chunk) > mcp.DefaultMaxLineLength {
			// Too long: refuse it and skip to its end without keeping it.
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = g.r.ReadSlice('\n')
			}
			g.answer(nil, jsonrpc.CodeParseError, "Parse error: message longer than the line limit")
			return nil, err
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(bytes.TrimSpace(line)) == 0 {
			return nil, err
		}
		return g.check(line), err
	}
}

// check returns what to pass on for line, each message on a line of its
// own; or nil after answering line with an error.
func (g *Guard) check(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) == 0:
		return nil
	case !json.Valid(trimmed):
		g.answer(nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON")
		return nil
	case trimmed[0] == '[':
		return g.checkBatch(trimmed)
	}
	msg, err := jsonrpc.DecodeMessage(trimmed)
	if err != nil {
		g.answer(trimmed, jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
		return nil
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		g.passing(req)
	}
	// Without the blanks around it: the SDK wants a newline right after a
	// message.
	return append(trimmed, '\n')
}

// passing records a request passed on: a call in flight, a cancellation,
// the initialize request's id.
func (g *Guard) passing(req *jsonrpc.Request) {
	switch {
	case req.IsCall():
		if req.Method == "initialize" {
			var p mcp.InitializeParams
			if json.Unmarshal(req.Params, &p) == nil {
				g.noBatches.Store(!hasBatches(p.ProtocolVersion))
			}
		}
		g.calls.Add(req.ID) // a reused id is the SDK's to drop
	case req.Method == "notifications/cancelled":
		var p mcp.CancelledParams
		if json.Unmarshal(req.Params, &p) != nil {
			return
		}
		if id, err := jsonrpc.MakeID(p.RequestID); err == nil {
			g.calls.Cancel(id)
		}
	}
}

// checkBatch checks a batch as the SDK's readBatch and ioConn.Read do,
// and answers it if the SDK would end the session at it. It passes the
// batch's notifications on first, one a line, and then the rest of the
// batch, if any.
func (g *Guard) checkBatch(batch []byte) []byte {
	if g.noBatches.Load() {
		g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: JSON-RPC batches are not supported in protocol "+firstNoBatches+" and later")
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(batch, &elems); err != nil || len(elems) == 0 {
		g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: empty batch")
		return nil
	}
	var (
		notes, rest [][]byte
		ids         []jsonrpc.ID
		seen        = map[jsonrpc.ID]bool{}
		noteReqs    []*jsonrpc.Request
	)
	for _, e := range elems {
		msg, err := jsonrpc.DecodeMessage(e)
		if err != nil {
			g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a batch element is not a JSON-RPC 2.0 message")
			return nil
		}
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case ok && !req.IsCall():
			notes = append(notes, e) // a notification: a line of its own
			noteReqs = append(noteReqs, req)
			continue
		case ok && seen[req.ID]:
			g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the batch repeats a request id")
			return nil
		case ok:
			seen[req.ID] = true
			ids = append(ids, req.ID)
		}
		rest = append(rest, e)
	}
	if !g.calls.AddAll(ids) {
		g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the batch reuses the id of a request in flight")
		return nil
	}
	for _, n := range noteReqs {
		g.passing(n)
	}
	var data []byte
	for _, n := range notes {
		data = append(append(data, n...), '\n')
	}
	switch {
	case len(rest) == 0:
	case len(notes) == 0:
		data = append(batch, '\n')
	default:
		data = append(data, '[')
		data = append(data, bytes.Join(rest, []byte(","))...)
		data = append(data, ']', '\n')
	}
	return data
}

// answer writes an error response, with the id of msg when it has a
// valid one, else null.
func (g *Guard) answer(msg []byte, code int64, text string) {
	id := json.RawMessage("null")
	var probe struct {
		ID json.RawMessage `json:"id"`
	}
	if msg != nil && json.Unmarshal(msg, &probe) == nil && len(probe.ID) > 0 {
		var v any
		if json.Unmarshal(probe.ID, &v) == nil {
			switch v.(type) {
			case string, float64:
				id = probe.ID
			}
		}
	}
	resp, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: text}})
	g.out.answer(append(resp, '\n'))
}

// written follows one line the SDK wrote: a response ends its call.
func (g *Guard) written(line []byte) {
	if len(line) > 0 && line[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(line, &msgs) != nil {
			return
		}
		for _, m := range msgs {
			if id, ok := responseID(m); ok {
				g.calls.Done(id)
			}
		}
		return
	}
	if id, ok := responseID(line); ok {
		g.calls.Done(id)
	}
}

// responseID returns the id of msg if it is a response. It reads only up
// to the "result" or "error" key (the SDK writes "jsonrpc" and "id"
// first), so that a large result is not scanned again.
func responseID(msg []byte) (jsonrpc.ID, bool) {
	dec := json.NewDecoder(bytes.NewReader(msg))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, false
	}
	var id any
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return jsonrpc.ID{}, false
		}
		switch key {
		case "id":
			if id, err = dec.Token(); err != nil {
				return jsonrpc.ID{}, false
			}
		case "result", "error":
			if id == nil {
				// An id after the result: read the whole message.
				m, err := jsonrpc.DecodeMessage(msg)
				resp, ok := m.(*jsonrpc.Response)
				return respID(resp, ok && err == nil)
			}
			got, err := jsonrpc.MakeID(id)
			return got, err == nil && got.IsValid()
		case "method":
			return jsonrpc.ID{}, false
		default:
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return jsonrpc.ID{}, false
			}
		}
	}
	return jsonrpc.ID{}, false
}

func respID(resp *jsonrpc.Response, ok bool) (jsonrpc.ID, bool) {
	if !ok || !resp.ID.IsValid() {
		return jsonrpc.ID{}, false
	}
	return resp.ID, true
}

// writer serialises the SDK's writes and the Guard's answers on one
// stream, an answer never inside a line the SDK is writing.
type writer struct {
	g *Guard

	mu     sync.Mutex
	w      io.WriteCloser
	line   []byte   // the part of the current line written so far
	queued [][]byte // answers waiting for the end of the current line
}

func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.w.Write(p)
	w.line = append(w.line, p[:n]...)
	start := 0
	for {
		i := bytes.IndexByte(w.line[start:], '\n')
		if i < 0 {
			break
		}
		w.g.written(bytes.TrimSpace(w.line[start : start+i]))
		start += i + 1
	}
	w.line = w.line[:copy(w.line, w.line[start:])]
	if len(w.line) == 0 {
		for _, a := range w.queued {
			w.w.Write(a)
		}
		w.queued = nil
	}
	return n, err
}

func (w *writer) answer(p []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.line) > 0 {
		w.queued = append(w.queued, p)
		return
	}
	w.w.Write(p)
}

func (w *writer) Close() error { return w.w.Close() }
