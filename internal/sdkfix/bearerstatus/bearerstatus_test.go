package bearerstatus_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolroute/toolroute/internal/sdkfix/bearerstatus"
)

// TestServeHandsTheTokenToTheSDK: a request served with its verified
// token information reaches the handler with that information in its
// context (put there by the SDK's middleware), and what was handed over
// is forgotten, also when the SDK refuses the request.
func TestServeHandsTheTokenToTheSDK(t *testing.T) {
	var got *auth.TokenInfo
	h := bearerstatus.New(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got = auth.TokenInfoFromContext(r.Context())
	}), &auth.RequireBearerTokenOptions{Scopes: []string{"mcp"}})
	serve := func(ti *auth.TokenInfo) int {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", "Bearer tok")
		h.Serve(rec, r, ti)
		return rec.Code
	}
	want := &auth.TokenInfo{UserID: "alice", Scopes: []string{"mcp"}, Expiration: time.Now().Add(time.Hour)}
	if code := serve(want); code != http.StatusOK || got != want {
		t.Fatalf("Serve answered %d and the handler saw %v, want 200 and %v", code, got, want)
	}
	got = nil
	if code := serve(&auth.TokenInfo{UserID: "bob", Expiration: time.Now().Add(time.Hour)}); code != http.StatusForbidden || got != nil {
		t.Fatalf("a token without the SDK's required scope: %d, handler saw %v; want 403 and no call", code, got)
	}
	if n := bearerstatus.Pending(h); n != 0 {
		t.Fatalf("%d requests' token information still held after their requests", n)
	}
}
