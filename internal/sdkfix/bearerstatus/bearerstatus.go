// Package bearerstatus works around go-sdk's auth.RequireBearerToken
// choosing the HTTP status of every verifier failure itself: 401 for an
// error that wraps auth.ErrInvalidToken, 400 for auth.ErrOAuth (go-sdk PR
// #399) and 500 for any other, with no option to answer otherwise (none
// at v1.8.0; no go-sdk issue asking for one was found). An authorization
// server that cannot be reached is an outage, not the client's fault: it
// must be answered 503 with Retry-After, so that a client retries instead
// of throwing its token away or giving up.
//
// The server therefore verifies the token itself and answers the
// failures; a verified request still goes through the SDK's middleware,
// which puts the token's information in the request's context
// (auth.TokenInfoFromContext: the streamable handler binds sessions with
// it) and applies its own checks. [Handler] is that hand-over: the SDK
// calls its verifier with the request it was given, so the verified
// information is handed over keyed by the request, sparing every request
// a context value and a request copy.
//
// Delete this package when TestCanarySDKAnswersOutageWith500 fails: the
// SDK then answers an outage as it should, or lets a verifier choose.
package bearerstatus

import (
	"context"
	"errors"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// errNotVerified is what the SDK's middleware answers (500) for a request
// that reached it without going through [Handler.Serve]: not reached.
var errNotVerified = errors.New("token verification unavailable")

// Handler hands verified requests to go-sdk's auth.RequireBearerToken in
// front of a handler. It must be created with [New].
type Handler struct {
	mu       sync.Mutex
	verified map[*http.Request]*auth.TokenInfo
	sdk      http.Handler
}

// New returns a Handler that serves next behind auth.RequireBearerToken
// with opts (which may be nil), for requests verified already.
func New(next http.Handler, opts *auth.RequireBearerTokenOptions) *Handler {
	h := &Handler{verified: map[*http.Request]*auth.TokenInfo{}}
	h.sdk = auth.RequireBearerToken(func(_ context.Context, _ string, r *http.Request) (*auth.TokenInfo, error) {
		if ti := h.take(r); ti != nil {
			return ti, nil
		}
		return nil, errNotVerified
	}, opts)(next)
	return h
}

// Serve serves r, whose bearer token the caller verified as ti, through
// the SDK's middleware: the SDK's verifier answers ti for r (a nil ti is
// answered 500, "token verification unavailable"). The SDK still applies its own checks (scopes, expiry) and answers
// them itself.
func (h *Handler) Serve(w http.ResponseWriter, r *http.Request, ti *auth.TokenInfo) {
	h.put(r, ti)
	defer h.take(r) // taken already, unless the SDK refused before verifying
	h.sdk.ServeHTTP(w, r)
}

func (h *Handler) put(r *http.Request, ti *auth.TokenInfo) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.verified[r] = ti
}

// take returns r's token information and forgets it (nil if none).
func (h *Handler) take(r *http.Request) *auth.TokenInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	ti := h.verified[r]
	delete(h.verified, r)
	return ti
}
