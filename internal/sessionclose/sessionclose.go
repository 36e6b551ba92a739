// Package sessionclose works around go-sdk issue #440 (fix proposed in
// go-sdk PR #1029, StreamableHTTPHandler.Close, open at v1.8.0): a
// stateful mcp.StreamableHTTPHandler cannot be shut down. Its standalone
// event streams (GET) never end on their own and hold net/http's graceful
// shutdown until its deadline; its sessions keep their goroutines until
// they expire; nothing refuses new sessions while the server stops.
//
// [Handler] wraps the SDK's handler and follows what it holds open, so
// that a shutdown can refuse new sessions, wait for the requests being
// served, end the streams and close the sessions it opened.
//
// Delete this package when TestCanarySDKHandlerHasNoClose fails: the
// SDK's handler then closes itself.
package sessionclose

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/inflight"
)

// Handler serves a stateful streamable HTTP handler and follows what it
// holds open. Only the sessions this handler created are closed: the same
// *mcp.Server may serve other transports. It must be created with [New].
type Handler struct {
	server   *mcp.Server
	next     http.Handler
	requests *inflight.Tracker[*http.Request] // requests other than streams

	mu      sync.Mutex
	ids     map[string]struct{} // sessions this handler opened
	prune   int                 // len(ids) at which to drop ended sessions
	streams map[*http.Request]context.CancelFunc
	closing bool // StopOpening: no new sessions
	ending  bool // EndStreams: no new streams
}

// New wraps next, the stateful streamable HTTP handler of s.
func New(s *mcp.Server, next http.Handler) *Handler {
	return &Handler{server: s, next: next, requests: inflight.New[*http.Request](), ids: map[string]struct{}{}, prune: 64, streams: map[*http.Request]context.CancelFunc{}}
}

// ServeHTTP serves r, ending a GET stream when [Handler.EndStreams] is
// called and remembering the session a response names. After
// [Handler.StopOpening], a request that would open a session (a POST
// without Mcp-Session-Id) is refused with 503; after EndStreams, a new
// stream too.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		h.mu.Lock()
		if h.ending {
			h.mu.Unlock()
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		key := r
		h.streams[key] = cancel
		h.mu.Unlock()
		defer func() {
			h.mu.Lock()
			delete(h.streams, key)
			h.mu.Unlock()
		}()
		h.next.ServeHTTP(w, r.WithContext(ctx))
		return
	}
	h.mu.Lock()
	refuse := h.closing && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	h.mu.Unlock()
	if refuse {
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	h.requests.Add(r)
	defer h.requests.Done(r)
	h.next.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" && r.Method == http.MethodPost {
		h.add(id)
	}
}

// add remembers session id. Sessions also end without this handler
// seeing it (idle timeout, DELETE): once the set has doubled, the ended
// ones are dropped, so it stays proportional to the live sessions.
func (h *Handler) add(id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.ids[id]; ok {
		return
	}
	h.ids[id] = struct{}{}
	if len(h.ids) < h.prune {
		return
	}
	live := map[string]struct{}{}
	for s := range h.server.Sessions() {
		if id := s.ID(); id != "" {
			live[id] = struct{}{}
		}
	}
	for id := range h.ids {
		if _, ok := live[id]; !ok {
			delete(h.ids, id)
		}
	}
	h.prune = max(64, 2*len(h.ids))
}

// StopOpening refuses new sessions.
func (h *Handler) StopOpening() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closing = true
}

// WaitRequests waits until no request other than a stream is being
// served, or ctx is done. A call's response is written on its request's
// stream after the call has ended: a client whose standalone stream ends
// may give up the session before it has read the response.
func (h *Handler) WaitRequests(ctx context.Context) { h.requests.Wait(ctx) }

// EndStreams ends every standalone stream, and refuses new ones.
func (h *Handler) EndStreams() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ending = true
	for _, cancel := range h.streams {
		cancel()
	}
}

// CloseAll closes every session this handler opened, all at once, and
// waits until they are closed or ctx is done. Closing a session waits for
// its handlers: one that ignores its context would hold it forever.
func (h *Handler) CloseAll(ctx context.Context) {
	h.mu.Lock()
	ids := h.ids
	h.ids = map[string]struct{}{}
	h.mu.Unlock()
	var wg sync.WaitGroup
	for s := range h.server.Sessions() {
		if _, ok := ids[s.ID()]; ok {
			wg.Go(func() { s.Close() })
		}
	}
	closed := make(chan struct{})
	go func() {
		wg.Wait()
		close(closed)
	}()
	select {
	case <-closed:
	case <-ctx.Done():
	}
}
