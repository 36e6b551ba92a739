package server

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/sdkfix/statelesscancel"
	"github.com/toolroute/toolroute/internal/sdkfix/statelesscancel/callreg"
	"github.com/toolroute/toolroute/internal/sdkfix/statelesscancel/rpcscan"
)

// errRequestEnded is the cause of a call's context ending because its
// stateless HTTP request ended (the client went away).
var errRequestEnded = errors.New("server: the HTTP request of the call ended")

// errClientCancelled is the cause of a call's context ending because its
// client cancelled it (notifications/cancelled) in another stateless
// HTTP request.
var errClientCancelled = errors.New("server: the client cancelled the call (notifications/cancelled)")

// bindCalls ties every call a stateless HTTP request carries to the
// request: when the request ends, the call is cancelled, whatever the
// protocol version. The SDK does so only for 2026-07-28 requests
// (StreamableHTTPOptions.PropagateRequestCancellation); a stateless
// 2025 request's answer can be delivered only on its own request as
// well, so once the client has gone, nothing is lost by stopping. It is
// the server's side of a go-sdk workaround (go-sdk #1093; see
// internal/sdkfix/statelesscancel, whose canary says when to delete it).
//
// A 2025 client cancels a call with notifications/cancelled, which over
// stateless HTTP comes in a request of its own, and so reaches a session
// (the SDK's, of that request) that knows nothing of the call: bindCalls
// cancels the calls in flight in this process that the same caller (the
// same verified subject, or for a caller without one the same token: see
// [callerKey]) sent with that request id. A caller without a token
// ([HTTPOptions.Anonymous]) cannot cancel this way: anonymous callers
// could not be told apart.
//
// With a [Cancellations] (rel not nil), a cancellation that finds no call
// of its caller in flight here is published to the other replicas, and
// theirs are delivered here: stop ends the subscription.
//
// d, if not nil, is the drain every call of a request reaches (see
// [drain]): the request's context carries it, with the request (see
// [transport]).
//
// serve answers each request, given its body as read (nil but for a
// POST), which r.Body holds again too.
func bindCalls(serve func(w http.ResponseWriter, r *http.Request, body []byte), maxBody int64, rel *relay, d *drain) (_ http.Handler, stop func()) {
	calls := callreg.New[callerID, *boundRequest]() // the stateless requests in flight
	live := &liveRequests{m: map[*boundRequest]struct{}{}}
	stop = func() {}
	if d != nil {
		// One watch of the drain for every request, not one per call.
		context.AfterFunc(d.Aborted(), live.abort)
	}
	if rel != nil {
		unsubscribe := rel.c.Subscribe(func(caller string, id json.RawMessage) {
			if k, ok := received(caller, id); ok {
				calls.Each(k, endCancelled)
			}
		})
		stop = sync.OnceFunc(func() {
			unsubscribe()
			rel.close()
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A 2026-07-28 request's calls end with it by the SDK's own doing
		// (StreamableHTTPOptions.PropagateRequestCancellation, for a
		// request with this header whose body it parses): no need to
		// watch it (TestStatelessCallEndsWithItsRequest fails if the SDK stops).
		b := &boundRequest{ctx: r.Context(), drain: d, sdkEnds: statelesscancel.SDKEndsCalls(r)}
		defer b.end(errRequestEnded)
		if d != nil {
			live.add(b)
			defer live.remove(b)
		}
		ctx := withTransport(r.Context(), &transport{drain: d, request: b})
		if r.Method != http.MethodPost {
			serve(w, r.WithContext(ctx), nil)
			return
		}
		// Read ahead for every POST, so that a body refused for the
		// server's memory (errBodyBudget) is answered as such.
		body, err := peekBody(w, r, maxBody)
		if err != nil {
			bodyError(w, err)
			return
		}
		if user, ok := callerKey(r); ok {
			ids, cancelled := rpcscan.Scan(body, nil)
			for _, id := range cancelled {
				if !calls.Each(callKey{User: user, ID: id}, endCancelled) && rel != nil {
					rel.publish(user, id)
				}
			}
			if len(ids) > 0 {
				calls.Add(user, ids, b)
				defer calls.Remove(user, ids, b)
			}
		}
		serve(w, r.WithContext(ctx), body)
	}), stop
}

// boundRequest is a stateless HTTP request, and what ends the calls it
// carries (see [bindCalls]): each call binds its context's cancel to it.
type boundRequest struct {
	ctx     context.Context // the request's
	drain   *drain          // nil: none
	sdkEnds bool            // the SDK ends the calls when the request ends: no watch

	mu    sync.Mutex
	cause error       // why the request ended; nil while it runs
	stop  func() bool // stops the watch on the request's context; nil: none
	calls []boundCall // bound, in flight
	next  uint64      // the id of the last call bound
}

// endsAtAbortOf reports whether b (which may be nil) ends its calls at
// d's abort (a hard shutdown), with cause ErrShuttingDown.
func (b *boundRequest) endsAtAbortOf(d *drain) bool { return b != nil && b.drain == d }

// bind has cancel called when the request ends (with the cause it ends
// with), at once if it has ended, and at its drain's abort. It returns
// the id to unbind it with.
func (b *boundRequest) bind(cancel context.CancelCauseFunc) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cause == nil && b.drain != nil && b.drain.Aborted().Err() != nil {
		b.cause = ErrShuttingDown // aborted before its watch ended b
	}
	b.next++
	if b.cause != nil {
		cancel(b.cause)
		return b.next
	}
	if b.stop == nil && !b.sdkEnds {
		b.stop = context.AfterFunc(b.ctx, b.gone)
	}
	b.calls = append(b.calls, boundCall{b.next, cancel})
	return b.next
}

// unbind forgets the call bound with id: it is over.
func (b *boundRequest) unbind(id uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.calls = slices.DeleteFunc(b.calls, func(c boundCall) bool { return c.id == id })
}

// boundCall is a call bound to its request.
type boundCall struct {
	id     uint64
	cancel context.CancelCauseFunc
}

// gone ends the request when the client went away.
func (b *boundRequest) gone() { b.end(errRequestEnded) }

// end ends the request (the first cause is kept), cancelling its calls.
func (b *boundRequest) end(cause error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.cause != nil {
		return
	}
	b.cause = cause
	if b.stop != nil {
		b.stop()
	}
	for _, c := range b.calls {
		c.cancel(cause)
	}
}

// liveRequests is the stateless requests in flight of a handler with a
// drain, which its abort ends.
type liveRequests struct {
	mu sync.Mutex
	m  map[*boundRequest]struct{}
}

func (l *liveRequests) add(b *boundRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[b] = struct{}{}
}

func (l *liveRequests) remove(b *boundRequest) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, b)
}

// abort ends every request in flight (see [drain]).
func (l *liveRequests) abort() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for b := range l.m {
		b.end(ErrShuttingDown)
	}
}

// callerID is a verified caller as [Cancellations] know it: the SHA-256
// of the user a stateful session would be bound to (see [sessionUser]:
// its subject, or for a caller without one, its token's digest). It is
// the same on every replica that verifies callers alike, and tells
// nothing of a token.
type callerID [sha256.Size]byte

// String is the id in hex, as [Cancellations] carry it.
func (c callerID) String() string { return hex.EncodeToString(c[:]) }

// callerKey is the verified caller of r, or false for an anonymous
// request.
func callerKey(r *http.Request) (callerID, bool) {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return callerID{}, false
	}
	c, ok := ti.Extra[tokenCallerKey].(authz.Caller)
	if !ok || c.Subject == "" && c.Bearer == "" {
		return callerID{}, false
	}
	return userDigest(c.Subject, c.Bearer), true
}

// userDigest is the SHA-256 of sessionUser(subject, token).
func userDigest(subject, token string) callerID {
	return sha256.Sum256([]byte(sessionUser(subject, token)))
}

// maxPeekReserve bounds the room [peekBody] reserves for a body from its
// declared Content-Length, before any of it has arrived: a client can
// declare 4 MiB and send one byte.
const maxPeekReserve = 4 << 10

// peekBody reads r's body (at most max bytes; 0: no limit) and puts it
// back for the next handler, which reads it again.
func peekBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	src := r.Body
	if max > 0 && (r.ContentLength < 0 || r.ContentLength > max) {
		// net/http bounds a body of a declared length by that length.
		src = http.MaxBytesReader(w, r.Body, max)
	}
	var buf bytes.Buffer
	if r.ContentLength > 0 && (max <= 0 || r.ContentLength <= max) {
		// Room for a small body at once (ReadFrom wants MinRead free to
		// read EOF), but never memory for what is only declared: a larger
		// body's buffer grows as its bytes arrive.
		buf.Grow(int(min(r.ContentLength, maxPeekReserve)) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(src)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(buf.Bytes()))
	return buf.Bytes(), nil
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		return
	}
	if errors.Is(err, errBodyBudget) {
		w.Header().Set("Retry-After", "1")
		http.Error(w, "the server is reading too many large request bodies; try again later", http.StatusServiceUnavailable)
		return
	}
	http.Error(w, "reading the request body failed", http.StatusBadRequest)
}

// callKey is a call in flight: its caller (see [callerKey]) and its
// JSON-RPC id (see [rpcscan.IDKey]).
type callKey = callreg.Key[callerID]

// endCancelled ends a request whose call its client cancelled.
func endCancelled(b *boundRequest) { b.end(errClientCancelled) }
