// Package sessionclose works around go-sdk issue #440 (fix proposed in
// go-sdk PR #1029, StreamableHTTPHandler.Close, open at v1.8.0): a
// stateful mcp.StreamableHTTPHandler cannot be shut down. Its standalone
// event streams (GET) never end on their own and hold net/http's graceful
// shutdown until its deadline; its sessions keep their goroutines until
// they expire; nothing refuses new sessions while the server stops.
//
// [Handler] wraps the SDK's handler and follows what it holds open, so
// that a shutdown can refuse new sessions, wait for the requests being
// served, end the streams and close the sessions it opened. It also
// bounds the sessions open at once, in all and per user (the SDK opens a
// session for every initialize, without bound).
//
// Delete this package when TestCanarySDKHandlerHasNoClose fails: the
// SDK's handler then closes itself.
package sessionclose

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/inflight"
)

// Handler serves a stateful streamable HTTP handler and follows what it
// holds open. Only the sessions this handler created are closed: the same
// *mcp.Server may serve other transports. It must be created with [New].
type Handler struct {
	server   *mcp.Server
	next     http.Handler
	limits   Limits
	requests *inflight.Tracker[*http.Request] // requests other than streams

	mu      sync.Mutex
	ids     map[string]string // sessions this handler opened: their users
	users   map[string]int    // sessions of ids, and openings under way, per user
	opening int               // openings under way
	streams map[*http.Request]context.CancelFunc
	closing bool // StopOpening: no new sessions
	ending  bool // EndStreams: no new streams
}

// Limits bound the sessions a [Handler] keeps open at once.
type Limits struct {
	// Total bounds the sessions of all users; PerUser those of one user
	// (the UserID of the request's auth.TokenInfo; requests without one
	// count as one user). Both must be positive.
	Total, PerUser int
	// MaxBody bounds what is read of a refused request's body, to answer
	// with its JSON-RPC id.
	MaxBody int64
	// IdleAfter is the sessions' idle timeout (0: none), for the refusal's
	// text.
	IdleAfter time.Duration
}

// New wraps next, the stateful streamable HTTP handler of s.
func New(s *mcp.Server, next http.Handler, limits Limits) *Handler {
	if limits.Total <= 0 || limits.PerUser <= 0 {
		panic(fmt.Sprintf("sessionclose: limits %+v: Total and PerUser must be positive", limits))
	}
	return &Handler{
		server: s, next: next, limits: limits, requests: inflight.New[*http.Request](),
		ids: map[string]string{}, users: map[string]int{}, streams: map[*http.Request]context.CancelFunc{},
	}
}

// ServeHTTP serves r, ending a GET stream when [Handler.EndStreams] is
// called and remembering the session a response names. After
// [Handler.StopOpening], a request that would open a session (a POST
// without Mcp-Session-Id) is refused with 503; after EndStreams, a new
// stream too. A request that would open a session past the [Limits] is
// refused with 429 (its user's bound) or 503 (the total bound) and a
// JSON-RPC error.
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
	opens := r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == ""
	if !opens {
		h.requests.Add(r)
		defer h.requests.Done(r)
		h.next.ServeHTTP(w, r)
		return
	}
	user := ""
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
		user = ti.UserID
	}
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		http.Error(w, "server shutting down", http.StatusServiceUnavailable)
		return
	}
	status, refusal := h.reserveLocked(user)
	h.mu.Unlock()
	if status != 0 {
		h.refuse(w, r, status, refusal)
		return
	}
	id := ""
	defer func() { h.opened(user, id) }()
	h.requests.Add(r)
	defer h.requests.Done(r)
	h.next.ServeHTTP(w, r)
	id = w.Header().Get("Mcp-Session-Id")
}

// reserveLocked reserves a session for user, or returns the status and
// the text of a refusal. h.mu must be held.
func (h *Handler) reserveLocked(user string) (int, string) {
	if len(h.ids)+h.opening >= h.limits.Total || h.users[user] >= h.limits.PerUser {
		h.pruneLocked()
	}
	switch {
	case h.users[user] >= h.limits.PerUser:
		idle := ""
		if h.limits.IdleAfter > 0 {
			idle = fmt.Sprintf(" (after %v)", h.limits.IdleAfter)
		}
		return http.StatusTooManyRequests, fmt.Sprintf("server: this caller has %d sessions open, the most allowed: close one (HTTP DELETE with its Mcp-Session-Id) or wait until one idles out%s", h.users[user], idle)
	case len(h.ids)+h.opening >= h.limits.Total:
		return http.StatusServiceUnavailable, fmt.Sprintf("server: %d sessions are open, the most this server allows: try again later", h.limits.Total)
	}
	h.opening++
	h.users[user]++
	return 0, ""
}

// opened ends the reservation of user's opening: id is the session it
// opened, or "" if none.
func (h *Handler) opened(user, id string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.opening--
	if _, dup := h.ids[id]; id == "" || dup {
		h.forgetLocked(user)
		return
	}
	h.ids[id] = user
}

func (h *Handler) forgetLocked(user string) {
	if h.users[user]--; h.users[user] <= 0 {
		delete(h.users, user)
	}
}

// pruneLocked forgets the sessions that ended without this handler
// seeing it (idle timeout, DELETE). h.mu must be held.
func (h *Handler) pruneLocked() {
	live := map[string]struct{}{}
	for s := range h.server.Sessions() {
		if id := s.ID(); id != "" {
			live[id] = struct{}{}
		}
	}
	for id, user := range h.ids {
		if _, ok := live[id]; !ok {
			delete(h.ids, id)
			h.forgetLocked(user)
		}
	}
}

// refuse answers r, which would open a session past a bound, with status
// and a JSON-RPC error of text, naming r's id if its body tells it.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, status int, text string) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	if body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.limits.MaxBody)); err == nil {
		json.Unmarshal(body, &msg)
	}
	id := json.RawMessage("null")
	if v := bytes.TrimSpace(msg.ID); len(v) > 0 && (v[0] == '"' || v[0] == '-' || '0' <= v[0] && v[0] <= '9') {
		id = v
	}
	data, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      id,
		"error":   map[string]any{"code": -32000, "message": text},
	})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Retry-After", "60")
	w.WriteHeader(status)
	w.Write(data)
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
	h.ids = map[string]string{}
	h.users = map[string]int{}
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
