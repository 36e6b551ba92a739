package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/tsclient"
	"github.com/toolroute/toolroute/server"
)

// TestTypeScriptClientCancelsStatelessCall: the official TypeScript SDK
// client aborts a call over stateless HTTP, and stays connected; the
// server's handler is cancelled at once by the client's
// notifications/cancelled (it would otherwise run until released, or
// until the client closes its connection).
func TestTypeScriptClientCancelsStatelessCall(t *testing.T) {
	node, script := tsclient.Script(t, "cancel.mjs")
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{})
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, script, hs.URL(), secretToken, "300", "3000")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	type result struct {
		out []byte
		err error
	}
	ran := make(chan result, 1)
	go func() {
		out, err := cmd.Output()
		ran <- result{out, err}
	}()
	select {
	case <-d.started:
	case r := <-ran:
		t.Fatalf("the client ended before the call started: %v\n%s\n%s", r.err, r.out, stderr.String())
	}
	select {
	case cause := <-d.causes:
		if !errors.Is(cause, server.ErrClientCancelledForTest) {
			t.Errorf("the handler's context ended with %v, want the client's cancellation", cause)
		}
	case <-time.After(2 * time.Second):
		close(d.release)
		t.Error("the aborted call still runs 2s later, its client still connected")
	}
	r := await.Recv(t, ran, "the call's report")
	if r.err != nil {
		t.Fatalf("client: %v\n%s", r.err, stderr.String())
	}
	var got struct {
		Outcome         string `json:"outcome"`
		ProtocolVersion string `json:"protocolVersion"`
	}
	if err := json.Unmarshal(r.out, &got); err != nil || got.Outcome != "aborted" {
		t.Errorf("client printed %s (%v), want an aborted call", r.out, err)
	}
	t.Logf("TypeScript SDK client, protocol %s: %s", got.ProtocolVersion, strings.TrimSpace(string(r.out)))
}
