package server

import (
	"context"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// sessions follows what a stateful HTTP handler holds open, so that
// [HTTPServer.Shutdown] can end it: the standalone event streams (GET),
// which never end on their own and would hold net/http's graceful
// shutdown until its deadline, and the sessions themselves, whose
// goroutines the SDK keeps until they are closed or expire.
//
// Only the sessions this handler created are closed: the same
// *mcp.Server may serve other transports.
type sessions struct {
	server *mcp.Server

	mu      sync.Mutex
	ids     map[string]struct{} // sessions this handler opened
	prune   int                 // len(ids) at which to drop ended sessions
	streams map[*http.Request]context.CancelFunc
	closing bool          // Shutdown stopped accepting: no new sessions
	ending  bool          // Shutdown ends streams: no new streams
	posts   int           // requests other than streams being served
	idle    chan struct{} // closed and replaced whenever posts drops to 0
}

func newSessions(s *mcp.Server) *sessions {
	return &sessions{server: s, ids: map[string]struct{}{}, prune: 64, streams: map[*http.Request]context.CancelFunc{}, idle: make(chan struct{})}
}

// serve serves r with next, ending a GET stream when shutdown begins and
// remembering the session a response names. Once Shutdown has stopped
// accepting, a request that would open a session (a POST without
// Mcp-Session-Id) is refused with 503: served through
// [HTTPServer.Handler], nothing would close the session.
func (ss *sessions) serve(next http.Handler, w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		ss.mu.Lock()
		if ss.ending {
			ss.mu.Unlock()
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		key := r
		ss.streams[key] = cancel
		ss.mu.Unlock()
		defer func() {
			ss.mu.Lock()
			delete(ss.streams, key)
			ss.mu.Unlock()
		}()
		r = r.WithContext(ctx)
	} else {
		ss.mu.Lock()
		if ss.closing && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			ss.mu.Unlock()
			http.Error(w, "server shutting down", http.StatusServiceUnavailable)
			return
		}
		ss.posts++
		ss.mu.Unlock()
		defer func() {
			ss.mu.Lock()
			if ss.posts--; ss.posts == 0 {
				close(ss.idle)
				ss.idle = make(chan struct{})
			}
			ss.mu.Unlock()
		}()
	}
	next.ServeHTTP(w, r)
	if id := w.Header().Get("Mcp-Session-Id"); id != "" && r.Method == http.MethodPost {
		ss.add(id)
	}
}

// add remembers session id. Sessions also end without this handler
// seeing it (idle timeout, DELETE): once the set has doubled, the ended
// ones are dropped, so it stays proportional to the live sessions.
func (ss *sessions) add(id string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if _, ok := ss.ids[id]; ok {
		return
	}
	ss.ids[id] = struct{}{}
	if len(ss.ids) < ss.prune {
		return
	}
	live := map[string]struct{}{}
	for s := range ss.server.Sessions() {
		if id := s.ID(); id != "" {
			live[id] = struct{}{}
		}
	}
	for id := range ss.ids {
		if _, ok := live[id]; !ok {
			delete(ss.ids, id)
		}
	}
	ss.prune = max(64, 2*len(ss.ids))
}

// waitRequests waits until no request other than a stream is being
// served, or ctx is done. A call's response is written on its request's
// stream after the call has ended: a client whose standalone stream ends
// may give up the session before it has read the response.
func (ss *sessions) waitRequests(ctx context.Context) {
	for {
		ss.mu.Lock()
		n, idle := ss.posts, ss.idle
		ss.mu.Unlock()
		if n == 0 {
			return
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return
		}
	}
}

// stopOpening refuses new sessions.
func (ss *sessions) stopOpening() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.closing = true
}

// endStreams ends every standalone stream, and refuses new ones.
func (ss *sessions) endStreams() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	ss.ending = true
	for _, cancel := range ss.streams {
		cancel()
	}
}

// closeAll closes every session this handler opened, all at once, and
// waits until they are closed or ctx is done. Closing a session waits for
// its handlers: one that ignores its context would hold it forever.
func (ss *sessions) closeAll(ctx context.Context) {
	ss.mu.Lock()
	ids := ss.ids
	ss.ids = map[string]struct{}{}
	ss.mu.Unlock()
	var wg sync.WaitGroup
	for s := range ss.server.Sessions() {
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
