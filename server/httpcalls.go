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
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolroute/toolroute/authz"
)

// errRequestEnded is the cause of a call's context ending because its
// stateless HTTP request ended (the client went away).
var errRequestEnded = errors.New("server: the HTTP request of the call ended")

// errClientCancelled is the cause of a call's context ending because its
// client cancelled it (notifications/cancelled) in another stateless
// HTTP request.
var errClientCancelled = errors.New("server: the client cancelled the call (notifications/cancelled)")

type requestKey struct{}

// bindCalls ties every call a stateless HTTP request carries to the
// request: when the request ends, the call is cancelled, whatever the
// protocol version. The SDK does so only for 2026-07-28 requests
// (StreamableHTTPOptions.PropagateRequestCancellation); a stateless
// 2025 request's answer can be delivered only on its own request as
// well, so once the client has gone, nothing is lost by stopping.
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
func bindCalls(h http.Handler, maxBody int64, rel *relay) (_ http.Handler, stop func()) {
	calls := &statelessCalls{m: map[callKey]map[*callEntry]struct{}{}}
	stop = func() {}
	if rel != nil {
		unsubscribe := rel.c.Subscribe(func(caller string, id json.RawMessage) {
			if k, ok := received(caller, id); ok {
				calls.cancel(k)
			}
		})
		stop = sync.OnceFunc(func() {
			unsubscribe()
			rel.close()
		})
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancelCause(r.Context())
		defer cancel(errRequestEnded)
		defer context.AfterFunc(r.Context(), func() { cancel(errRequestEnded) })()
		if user := callerKey(r); user != "" && r.Method == http.MethodPost {
			body, err := peekBody(w, r, maxBody)
			if err != nil {
				bodyError(w, err)
				return
			}
			ids, cancelled := scanMessages(body)
			for _, id := range cancelled {
				if !calls.cancel(callKey{user, id}) && rel != nil {
					rel.publish(user, id)
				}
			}
			if len(ids) > 0 {
				e := &callEntry{cancel: cancel}
				calls.add(user, ids, e)
				defer calls.remove(user, ids, e)
			}
		}
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestKey{}, ctx)))
	}), stop
}

// boundRequest returns the context of the stateless HTTP request a call
// came in, or nil.
func boundRequest(ctx context.Context) context.Context {
	rc, _ := ctx.Value(requestKey{}).(context.Context)
	return rc
}

// callerKey is the verified caller of r, or "" for an anonymous request:
// the hex SHA-256 of the user a stateful session would be bound to (see
// [sessionUser]: its subject, or for a caller without one, its token's
// digest). It is the same on every replica that verifies callers alike,
// fixed in length, and tells nothing of a token.
func callerKey(r *http.Request) string {
	ti := auth.TokenInfoFromContext(r.Context())
	if ti == nil {
		return ""
	}
	c, ok := ti.Extra[tokenCallerKey].(authz.Caller)
	if !ok || c.Subject == "" && c.Bearer == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(sessionUser(c.Subject, c.Bearer)))
	return hex.EncodeToString(sum[:])
}

// peekBody reads r's body (at most max bytes) and puts it back for the
// next handler.
func peekBody(w http.ResponseWriter, r *http.Request, max int64) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, max))
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, nil
}

// bodyError answers a request whose body could not be read.
func bodyError(w http.ResponseWriter, err error) {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
		return
	}
	http.Error(w, "reading the request body failed", http.StatusBadRequest)
}

// wireMessage is what bindCalls reads of a JSON-RPC message.
type wireMessage struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// scanMessages returns the ids of the requests a body (a JSON-RPC message
// or a batch) carries, and the ids its notifications/cancelled name. A
// body that does not parse carries none: the SDK answers it.
func scanMessages(body []byte) (ids, cancelled []string) {
	var msgs []wireMessage
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) > 0 && b[0] == '[' {
		if json.Unmarshal(b, &msgs) != nil {
			return nil, nil
		}
	} else {
		var m wireMessage
		if json.Unmarshal(b, &m) != nil {
			return nil, nil
		}
		msgs = []wireMessage{m}
	}
	for _, m := range msgs {
		switch {
		case m.Method == "notifications/cancelled" && len(m.Params.RequestID) > 0:
			if id, ok := idKey(m.Params.RequestID); ok {
				cancelled = append(cancelled, id)
			}
		case m.Method != "" && len(m.ID) > 0:
			if id, ok := idKey(m.ID); ok {
				ids = append(ids, id)
			}
		}
	}
	return ids, cancelled
}

// idKey is a JSON-RPC id as a map key: a string id and a number id of the
// same text differ, as in JSON-RPC.
func idKey(raw json.RawMessage) (string, bool) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return "", false
	}
	switch v := v.(type) {
	case string:
		return "s" + v, true
	case json.Number:
		return "n" + v.String(), true
	}
	return "", false
}

// callKey is a call in flight: its caller (see [callerKey]) and its
// JSON-RPC id.
type callKey struct{ user, id string }

// callEntry is one stateless request in flight, which cancel ends.
type callEntry struct{ cancel context.CancelCauseFunc }

// statelessCalls is the stateless requests in flight, by caller and id.
// Several requests may share a key (two clients of one caller count ids
// alike): a cancellation ends them all, as the caller's.
type statelessCalls struct {
	mu sync.Mutex
	m  map[callKey]map[*callEntry]struct{}
}

func (c *statelessCalls) add(user string, ids []string, e *callEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		k := callKey{user, id}
		if c.m[k] == nil {
			c.m[k] = map[*callEntry]struct{}{}
		}
		c.m[k][e] = struct{}{}
	}
}

func (c *statelessCalls) remove(user string, ids []string, e *callEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		k := callKey{user, id}
		delete(c.m[k], e)
		if len(c.m[k]) == 0 {
			delete(c.m, k)
		}
	}
}

// cancel cancels the requests in flight under k, and reports whether
// there were any.
func (c *statelessCalls) cancel(k callKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for e := range c.m[k] {
		e.cancel(errClientCancelled)
	}
	return len(c.m[k]) > 0
}
