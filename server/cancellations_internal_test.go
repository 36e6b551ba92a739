package server

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/internal/sdkfix/statelesscancel/rpcscan"
)

// TestCancelledIDRoundTrip: an id published as JSON is delivered as the
// key of the same call; a malformed or oversized delivery is ignored.
func TestCancelledIDRoundTrip(t *testing.T) {
	caller := strings.Repeat("ab", 32)
	for _, raw := range []string{`"c-5"`, `7`, `-1.5e3`, `"\u00e9\"\\ \u2028"`, `""`, `"7"`} {
		key, ok := rpcscan.IDKey(json.RawMessage(raw))
		if !ok {
			t.Fatalf("rpcscan.IDKey(%s) failed", raw)
		}
		pub, ok := idJSON(key)
		if !ok {
			t.Fatalf("idJSON(%q) failed", key)
		}
		k, ok := received(caller, pub)
		if !ok || k.User.String() != caller || k.ID != key {
			t.Errorf("%s: published %s, delivered as %+v %v, want %s %q", raw, pub, k, ok, caller, key)
		}
	}
	long := `"` + strings.Repeat("x", maxCancelledIDBytes) + `"`
	key, _ := rpcscan.IDKey(json.RawMessage(long))
	if _, ok := idJSON(key); ok {
		t.Errorf("an id of %d bytes is published", len(long))
	}
	for _, bad := range []struct{ caller, id string }{
		{caller, long},
		{caller, `{"a":1}`},
		{caller, `null`},
		{caller, `"x`},
		{"sub:alice", `1`},
		{strings.Repeat("AB", 32), `1`},
		{caller + "0", `1`},
	} {
		if k, ok := received(bad.caller, json.RawMessage(bad.id)); ok {
			t.Errorf("received(%q, %s) = %+v, want it ignored", bad.caller, bad.id, k)
		}
	}
}
