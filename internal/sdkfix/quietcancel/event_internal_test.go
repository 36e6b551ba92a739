package quietcancel

import (
	"bytes"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// TestEventWriterDropsSplitResponse: the response to a cancelled call is
// dropped from its event stream even when it arrives in several writes;
// the other events pass whole, in order, and a body that is not an event
// stream passes untouched.
func TestEventWriterDropsSplitResponse(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(5))
	c := call{session: "s", user: "u", id: id}
	q := &sessions{calls: inflight.New[call]()}
	q.calls.Add(c)
	q.calls.Cancel(c)

	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/event-stream")
	w := &eventWriter{ResponseWriter: rec, q: q, call: c}
	progress := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progressToken\":1,\"progress\":1}}\n\n"
	for _, part := range []string{
		progress[:20], progress[20:],
		"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,", "\"result\":{}}\n", "\n",
	} {
		if n, err := w.Write([]byte(part)); err != nil || n != len(part) {
			t.Fatalf("Write(%q) = %d, %v", part, n, err)
		}
	}
	w.finish()
	if got := rec.Body.String(); got != progress {
		t.Errorf("stream = %q, want only the progress event %q", got, progress)
	}

	plain := httptest.NewRecorder()
	plain.Header().Set("Content-Type", "text/plain")
	w = &eventWriter{ResponseWriter: plain, q: q, call: c}
	w.Write([]byte("Bad Request"))
	w.finish()
	if got := plain.Body.String(); got != "Bad Request" {
		t.Errorf("plain body = %q, want it untouched", got)
	}
}

// nopCloser is a bytes.Buffer with Close.
type nopCloser struct{ bytes.Buffer }

func (*nopCloser) Close() error { return nil }

// TestStdioWriterDropsSplitResponse: on stdio, the response line to a
// cancelled call is dropped (and the call removed) even when it arrives in
// several writes; other lines pass whole. After a batch, nothing is
// dropped.
func TestStdioWriterDropsSplitResponse(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(5))
	calls := inflight.New[jsonrpc.ID]()
	calls.Add(id)
	calls.Cancel(id)
	var out nopCloser
	r, w := Stdio(io.NopCloser(strings.NewReader("")), &out, calls)
	ping := `{"jsonrpc":"2.0","id":6,"result":{}}` + "\n"
	for _, part := range []string{`{"jsonrpc":"2.0","id":5,`, `"result":{}}` + "\n" + ping[:10], ping[10:]} {
		if _, err := w.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if got := out.String(); got != ping {
		t.Errorf("output = %q, want only %q", got, ping)
	}
	if calls.Has(id) {
		t.Error("the dropped call is still in flight")
	}

	// Once a batch was read, a cancelled call's response is written.
	r = &batchSpotter{ReadCloser: io.NopCloser(strings.NewReader(`[{"jsonrpc":"2.0","id":7,"method":"ping"}]` + "\n")), batches: w.(*writer).batches}
	io.ReadAll(r)
	calls.Add(id)
	calls.Cancel(id)
	out.Reset()
	w.Write([]byte(`{"jsonrpc":"2.0","id":5,"result":{}}` + "\n"))
	if out.Len() == 0 {
		t.Error("after a batch, a cancelled call's response was dropped")
	}
}
