package statelesshttp_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/statelesshttp"
)

// TestNewProtocolCallEndsWithItsRequest: a 2026-07-28 call the fast path
// serves is cancelled when its HTTP request ends, as go-sdk's handler
// cancels it with PropagateRequestCancellation.
func TestNewProtocolCallEndsWithItsRequest(t *testing.T) {
	t.Run("tools/list", func(t *testing.T) { endsWithItsRequest(t, "tools/list", "", `{`+meta2026+`}`) })
	t.Run("tools/call", func(t *testing.T) {
		endsWithItsRequest(t, "tools/call", "wait", `{"name":"wait","arguments":{},`+meta2026+`}`)
	})
}

// endsWithItsRequest sends a call of method (Mcp-Name name, if any) with
// params, which a middleware holds until its context ends, and cancels
// its request.
func endsWithItsRequest(t *testing.T, method, name, params string) {
	s := mcp.NewServer(&mcp.Implementation{Name: "c", Version: "1"}, nil)
	started, ended, release := make(chan struct{}, 1), make(chan error, 1), make(chan struct{})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, m string, req mcp.Request) (mcp.Result, error) {
			if m != method {
				return next(ctx, m, req)
			}
			started <- struct{}{}
			select {
			case <-ctx.Done():
				ended <- context.Cause(ctx)
			case <-release: // the test failed: let the server close
			}
			return nil, ctx.Err()
		}
	})
	var handedOn atomic.Bool
	h := statelesshttp.New(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handedOn.Store(true)
		http.Error(w, "not the fast path", http.StatusTeapot)
	}), statelesshttp.Options{HeaderParams: func(n string) bool { return n != "wait" }})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.Serve(w, r, body)
	}))
	defer ts.Close()
	defer close(release) // before ts.Close

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL, strings.NewReader(call("1", method, params)))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	answered := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		answered <- err
	}()
	select {
	case <-started:
	case err := <-answered:
		t.Fatalf("answered before the call started (handed on: %v): %v", handedOn.Load(), err)
	}
	cancel()
	// A bound for failure only: the call ends when the server sees the
	// connection close, at once on loopback.
	select {
	case err := <-ended:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the call ended with %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not end with its request")
	}
	<-answered
}
