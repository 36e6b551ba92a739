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
// read), drops it, and passes every good line through unchanged: one bad
// line costs nothing but its own error response.
//
// A line longer than [mcp.DefaultMaxLineLength] is refused the same way
// without being buffered whole. Batches ("[" lines) pass through: the
// SDK validates and answers them.
//
// At the end of the input, lineGuard holds the end back until every call
// read is answered (see [cancelState.settle]): a client that writes its
// requests and closes its input still gets every answer.
type lineGuard struct {
	r   *bufio.Reader
	src io.Closer
	w   *lockedWriter
	st  *cancelState

	delivered int64 // good non-batch lines handed to the SDK

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
		line, err := g.readLine()
		if line != nil {
			g.pending = line
			if bytes.TrimSpace(line)[0] != '[' {
				g.delivered++
			}
		}
		g.err = err
	}
	n := copy(p, g.pending)
	g.pending = g.pending[n:]
	return n, nil
}

// readLine returns the next good line with its newline, nil for a line
// that was answered and dropped (or blank), and the source's error.
func (g *lineGuard) readLine() ([]byte, error) {
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
				return nil, err
			}
			return nil, nil
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && len(bytes.TrimSpace(line)) == 0 {
			return nil, err
		}
		good := g.check(line)
		if good != nil && good[len(good)-1] != '\n' {
			good = append(good, '\n') // the last line, at EOF
		}
		return good, err
	}
}

// check returns line if it is a JSON-RPC message or a batch, and nil
// after answering it otherwise.
func (g *lineGuard) check(line []byte) []byte {
	trimmed := bytes.TrimSpace(line)
	switch {
	case len(trimmed) == 0:
		return nil
	case !json.Valid(trimmed):
		g.answer(nil, jsonrpc.CodeParseError, "Parse error: the line is not valid JSON")
		return nil
	case trimmed[0] == '[':
		return line
	}
	if _, err := jsonrpc.DecodeMessage(trimmed); err != nil {
		g.answer(trimmed, jsonrpc.CodeInvalidRequest, "Invalid Request: not a JSON-RPC 2.0 message")
		return nil
	}
	return line
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
