// Package rawstdio connects a test to a raw go-sdk server over the SDK's
// own newline-delimited transport, line by line, so that the canaries of
// toolroute's SDK workarounds show what the SDK alone does with what a
// client writes.
package rawstdio

import (
	"bufio"
	"context"
	"io"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Conn is a raw client's end of a stdio session of an SDK server.
type Conn struct {
	// Session is the server's session.
	Session *mcp.ServerSession
	// Lines yields every line the server writes, until it closes its
	// output.
	Lines <-chan string

	out chan<- string // lines for the writer goroutine, in order
}

// Connect serves s over pipes with mcp.IOTransport and returns the
// client's end; the session is closed when the test ends.
func Connect(t testing.TB, s *mcp.Server) *Conn {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ss, err := s.Connect(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 16)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	out := make(chan string, 16)
	go func() {
		for l := range out {
			io.WriteString(inW, l+"\n")
		}
	}()
	t.Cleanup(func() {
		ss.Close()
		outW.Close()
		inW.Close() // ends a write the server no longer reads
		close(out)
	})
	return &Conn{Session: ss, Lines: lines, out: out}
}

// Send writes line and a newline, after the lines sent before, without
// waiting for the server to read them (it may have stopped reading).
func (c *Conn) Send(line string) { c.out <- line }
