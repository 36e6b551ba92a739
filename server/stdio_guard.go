package server

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// lineGuard sits between a stdio client and the SDK's newline-delimited
// decoder. The SDK ends the whole session at the first line that is not a
// JSON-RPC message (its decoder cannot resynchronise), losing every call
// in flight. lineGuard answers such a line itself, as JSON-RPC asks
// (-32700 parse error, -32600 invalid request, id null when it cannot be
// read), drops it, and passes every good message on, without the blanks
// around it (the SDK refuses anything but a newline after a message): one
// bad line costs nothing but its own error response.
//
// A line longer than [mcp.DefaultMaxLineLength] is refused the same way
// without being buffered whole.
//
// Batches ("[" lines) are checked here too: the SDK ends the session at a
// batch it cannot take (see readBatch and ioConn.Read in the SDK's
// mcp/transport.go). A batch that is empty, has an element that is not a
// JSON-RPC message, repeats a request id, or reuses the id of a call
// still in flight is answered with -32600 (id null) and dropped. The
// notifications of a good batch are passed on as lines of their own
// before the rest of it: the SDK tracks a batch's notifications as
// requests awaiting a response (under one empty id), so that a batch
// holding one would never be answered, and a second would end the
// session. JSON-RPC lets a batch's messages be processed in any order.
//
// Every call passed on is recorded in flight ([cancelState.inflight]) as
// it is passed on, before the SDK reads it, so that a later batch
// reusing its id is refused whatever the SDK has read so far.
//
// At the end of the input, lineGuard holds the end back until every call
// read is answered (see [cancelState.settle]): a client that writes its
// requests and closes its input still gets every answer.
type lineGuard struct {
	r   *bufio.Reader
	src io.Closer
	w   *lockedWriter
	st  *cancelState

	delivered int64 // messages handed to the SDK on lines of their own

	pending []byte // the rest of the current good line, for Read
	err     error  // the source's error, once every good line is out
}

func newLineGuard(r io.ReadCloser, w *lockedWriter, st *cancelState) *lineGuard {
	return &lineGuard{r: bufio.NewReaderSize(r, 64<<10), src: r, w: w, st: st}
}

func (g *lineGuard) Close() error { return g.src.Close() }

func (g *lineGuard) Read(p []byte) (int, error) {
	for len(g.pending) == 0 {
		if g.err != nil {
			g.st.settle(g.delivered)
			return 0, g.err
		}
		data, singles, err := g.readLine()
		if data != nil {
			g.pending = data
			g.delivered += singles
		}
		g.err = err
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns what to pass on for the next line (one or more
// messages, each on a line of its own) with the number of those that are
// not batches, nil for a line that was answered and dropped (or blank),
// and the source's error.
func (g *lineGuard) readLine() ([]byte, int64, error) {
	var line []byte
	for {
		chunk, err := g.r.ReadSlice('\n')
		if len(line)+len(chunk) > mcp.DefaultMaxLineLength {
			// Too long: refuse it and skip to its end without keeping it.
			line = nil
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = g.r.ReadSlice('\n')
			}
			g.answer(nil, jsonrpc.CodeParseError, "Parse error: message longer than the line limit")
			if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
				return nil, 0, err
			}
			return nil, 0, nil
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(bytes.TrimSpace(line)) == 0 {
			return nil, 0, err
		}
		good, singles := g.check(line)
		return good, singles, err
	}
}

// check returns what to pass on for line, each message on a line of its
// own, and how many of those are not batches; or nil after answering
// line with an error.
func (g *lineGuard) check(line []byte) ([]byte, int64) {
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) == 0:
		return nil, 0
	case !json.Valid(trimmed):
		g.answer(nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON")
		return nil, 0
	case trimmed[0] == '[':
		return g.checkBatch(trimmed)
	}
	msg, err := jsonrpc.DecodeMessage(trimmed)
	if err != nil {
		g.answer(trimmed, jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
		return nil, 0
	}
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		g.st.pass(req.ID)
	}
	// Without the blanks around it: the SDK wants a newline right after a
	// message.
	return append(trimmed, '\n'), 1
}

// checkBatch checks a batch as the SDK's readBatch and ioConn.Read do,
// and answers it if the SDK would end the session at it. It passes the
// batch's notifications on first, one a line, and then the rest of the
// batch, if any.
func (g *lineGuard) checkBatch(batch []byte) ([]byte, int64) {
	var elems []json.RawMessage
	if err := json.Unmarshal(batch, &elems); err != nil || len(elems) == 0 {
		g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: empty batch")
		return nil, 0
	}
	var (
		out, rest [][]byte
		ids       []jsonrpc.ID
		seen      = map[jsonrpc.ID]bool{}
	)
	for _, e := range elems {
		msg, err := jsonrpc.DecodeMessage(e)
		if err != nil {
			g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: a batch element is not a JSON-RPC 2.0 message")
			return nil, 0
		}
		req, ok := msg.(*jsonrpc.Request)
		switch {
		case ok && !req.IsCall():
			out = append(out, e) // a notification: a line of its own
			continue
		case ok && seen[req.ID]:
			g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the batch repeats a request id")
			return nil, 0
		case ok:
			seen[req.ID] = true
			ids = append(ids, req.ID)
		}
		rest = append(rest, e)
	}
	if !g.st.passBatch(ids) {
		g.answer(nil, jsonrpc.CodeInvalidRequest, "Invalid Request: the batch reuses the id of a request in flight")
		return nil, 0
	}
	singles := int64(len(out))
	var data []byte
	for _, n := range out {
		data = append(append(data, n...), '\n')
	}
	switch {
	case len(rest) == 0:
	case len(out) == 0:
		data = append(batch, '\n')
	default:
		data = append(data, '[')
		data = append(data, bytes.Join(rest, []byte(","))...)
		data = append(data, ']', '\n')
	}
	return data, singles
}

// answer writes an error response, with the id of msg when it has a
// valid one, else null.
func (g *lineGuard) answer(msg []byte, code int64, text string) {
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
	g.w.Write(append(resp, '\n'))
}

// lockedWriter serialises the SDK's writes (one whole message each) and
// lineGuard's error responses on one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.WriteCloser
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return l.w.Close() }
