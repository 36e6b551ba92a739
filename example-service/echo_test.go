package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// postCall posts one JSON-RPC message with the bearer token and returns
// the response body of its HTTP 200 answer.
func postCall(t *testing.T, url, token, body string) string {
	t.Helper()
	resp, data := postRawBody(t, url, "Bearer "+token, body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("HTTP %d: %.300s", resp.StatusCode, data)
	}
	return string(data)
}

// TestNoAmplification: a caller's 3 MB tool name or argument (the body
// limit is 4 MB) comes back neither in the response nor in the log; each
// is shortened to a bounded prefix with a marker giving its length.
func TestNoAmplification(t *testing.T) {
	url, stderr := start(t)
	big := strings.Repeat("x", 3<<20)
	tests := []struct {
		name, body, want string
	}{
		{"tool name", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + big + `","arguments":{}}}`,
			`unknown tool \"` + big[:128] + `…(truncated, 3145728 bytes)\"`},
		{"argument", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_item","arguments":{"id":"` + big + `"}}}`,
			`maxLength: \"` + big[:128] + `…(truncated, 3145728 bytes)\" contains 3145728 Unicode code points, more than 200`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(stderr.String())
			resp := postCall(t, url, "demo-viewer", tt.body)
			logged := stderr.String()[before:]
			if len(resp) > 2048 || !strings.Contains(resp, tt.want) {
				t.Errorf("response of %d bytes, want < 2 KiB with %.200q…:\n%.600s", len(resp), tt.want, resp)
			}
			if len(logged) > 2048 || !strings.Contains(logged, "…(truncated, 3145728 bytes)") {
				t.Errorf("the log grew by %d bytes, want < 2 KiB with the truncation marker:\n%.600s", len(logged), logged)
			}
		})
	}
}

// TestUpstreamEchoesBearer: an upstream whose error answer echoes the
// Authorization header (a 500 with the header in its message) puts no
// trace of the caller's token in the log, with or without the "Bearer"
// prefix, nor in the response.
func TestUpstreamEchoesBearer(t *testing.T) {
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		auth := r.Header.Get("Authorization")
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{
			"code":    "internal",
			"message": "request failed: Authorization: " + auth + "; token " + strings.TrimPrefix(auth, "Bearer "),
		}})
	}))
	t.Cleanup(upstream.Close)
	url, stderr := start(t, "-upstream", upstream.URL)
	resp := postCall(t, url, "demo-viewer", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_item","arguments":{"id":"itm-1"}}}`)
	// The client sees the status and the upstream's own message, without
	// the credentials it echoes.
	if want := "upstream answered 500 Internal Server Error: request failed: Authorization: [redacted]; token [redacted]"; !strings.Contains(resp, want) {
		t.Errorf("response: %s, want %q", resp, want)
	}
	if !stderr.waitFor("toolroute: tools/call", "upstream answered 500 Internal Server Error: request failed: Authorization: [redacted]; token [redacted]") {
		t.Fatalf("the upstream failure was not logged, redacted:\n%s", stderr)
	}
	// The log records (the demo banner prints the demo tokens on purpose).
	for _, line := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(line, "time=") && strings.Contains(line, "demo-viewer") {
			t.Errorf("the bearer reached the log: %s", line)
		}
	}
	if strings.Contains(resp, "demo-viewer") {
		t.Errorf("the bearer reached the response: %s", resp)
	}
}
