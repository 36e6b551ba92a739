package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/server"
)

// bus is a server.Cancellations shared by the replicas of a test, in
// memory: what one replica's member publishes is delivered to every
// other member's subscribers, as Redis pub/sub would.
type bus struct {
	mu        sync.Mutex
	subs      map[*busSub]struct{}
	published []string // caller + " " + id, in order
	fail      error    // Publish fails with it, if set
	block     bool     // Publish waits for its context to end
}

type busSub struct {
	from    *busMember
	deliver func(string, json.RawMessage)
}

// busMember is one replica's connection to a bus.
type busMember struct{ b *bus }

func newBus() *bus { return &bus{subs: map[*busSub]struct{}{}} }

func (b *bus) member() *busMember { return &busMember{b} }

func (b *bus) publishes() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.published...)
}

func (b *bus) subscribers() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.subs)
}

func (m *busMember) Publish(ctx context.Context, caller string, id json.RawMessage) error {
	b := m.b
	b.mu.Lock()
	fail, block := b.fail, b.block
	b.mu.Unlock()
	if block {
		<-ctx.Done()
		return ctx.Err()
	}
	if fail != nil {
		return fail
	}
	b.mu.Lock()
	b.published = append(b.published, caller+" "+string(id))
	var to []func(string, json.RawMessage)
	for s := range b.subs {
		if s.from != m {
			to = append(to, s.deliver)
		}
	}
	b.mu.Unlock()
	for _, deliver := range to {
		deliver(caller, id)
	}
	return nil
}

func (m *busMember) Subscribe(deliver func(string, json.RawMessage)) (stop func()) {
	s := &busSub{from: m, deliver: deliver}
	m.b.mu.Lock()
	m.b.subs[s] = struct{}{}
	m.b.mu.Unlock()
	return func() {
		m.b.mu.Lock()
		delete(m.b.subs, s)
		m.b.mu.Unlock()
	}
}

// startCall posts a 2025 stateless tools/call of "wait" with the JSON-RPC
// id to url, and returns the channel its last answer arrives on.
func startCall(t *testing.T, url, token, id string) <-chan map[string]any {
	t.Helper()
	answer := make(chan map[string]any, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"wait","arguments":{}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Protocol-Version", v2025)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			answer <- nil
			return
		}
		defer resp.Body.Close()
		answer <- lastMessage(resp.Body)
	}()
	return answer
}

// postCancel posts a notifications/cancelled of id (JSON) to url, and
// checks that it is accepted.
func postCancel(t *testing.T, url, token, id string) {
	t.Helper()
	resp := post(t, url, "Bearer "+token, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+id+`,"reason":"stop"}}`)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("notifications/cancelled: status %d", resp.StatusCode)
	}
}

// notCancelled checks that no call of d was cancelled for a while.
func notCancelled(t *testing.T, d *deps, why string) {
	t.Helper()
	select {
	case cause := <-d.causes:
		t.Fatalf("the call was cancelled (%v) by %s", cause, why)
	case <-time.After(200 * time.Millisecond):
	}
}

// TestCancellationsAcrossReplicas: a 2025 client's notifications/cancelled
// posted to replica B cancels the same caller's call in flight on replica
// A, through HTTPOptions.Cancellations; another caller's, or another id's,
// cancels nothing; a cancellation of a call in flight where it lands is
// not published.
func TestCancellationsAcrossReplicas(t *testing.T) {
	b := newBus()
	dA, dB := newDeps("a"), newDeps("b")
	a := startHTTP(t, newTestServer(t, server.Options{}, dA), server.HTTPOptions{Cancellations: b.member()})
	bSrv := startHTTP(t, newTestServer(t, server.Options{}, dB), server.HTTPOptions{Cancellations: b.member()})

	for _, id := range []string{`"c-5"`, `7`} {
		answer := startCall(t, a.URL(), secretToken, id)
		await.Recv(t, dA.started, "the call's start")
		postCancel(t, bSrv.URL(), "viewer-token", id) // another caller, same id
		other := `5`
		if id == `7` {
			other = `"7"` // a string is not the number of the same text
		}
		postCancel(t, bSrv.URL(), secretToken, other) // same caller, another id
		notCancelled(t, dA, "another caller's or another id's cancellation, on another replica")

		postCancel(t, bSrv.URL(), secretToken, id)
		select {
		case cause := <-dA.causes:
			if !errors.Is(cause, server.ErrClientCancelledForTest) {
				t.Errorf("id %s: cause %v, want the client's cancellation", id, cause)
			}
		case <-time.After(5 * time.Second):
			close(dA.release)
			t.Fatalf("id %s: the caller's cancellation on replica B did not cancel its call on replica A", id)
		}
		await.Recv(t, answer, "the call's answer")
	}

	// Each cancellation above found no call on B, and was published, the
	// caller as a digest.
	pub := b.publishes()
	if len(pub) != 6 {
		t.Fatalf("published %d cancellations, want 6: %q", len(pub), pub)
	}
	for _, p := range pub {
		if strings.Contains(p, secretToken) || strings.Contains(p, "viewer-token") || strings.Contains(p, "victor") {
			t.Errorf("published %q: it names a token or a subject", p)
		}
	}
	// The server publishes in the background: in any order. One digest
	// per caller: viewer-token's ids under one, secretToken's under
	// another.
	idsOf := map[string][]string{} // digest → the ids published with it
	for _, p := range pub {
		digest, id, _ := strings.Cut(p, " ")
		idsOf[digest] = append(idsOf[digest], id)
	}
	got := slices.Collect(maps.Values(idsOf))
	for _, ids := range got {
		slices.Sort(ids)
	}
	slices.SortFunc(got, func(a, b []string) int { return len(a) - len(b) })
	if want := [][]string{{`"c-5"`, `7`}, {`"7"`, `"c-5"`, `5`, `7`}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("published %q: want one digest per caller, with the ids %q", pub, want)
	}

	// A cancellation of a call in flight where it lands cancels it there,
	// and is not published.
	answer := startCall(t, bSrv.URL(), secretToken, `"local"`)
	await.Recv(t, dB.started, "the call's start")
	postCancel(t, bSrv.URL(), secretToken, `"local"`)
	select {
	case <-dB.causes:
	case <-time.After(5 * time.Second):
		close(dB.release)
		t.Fatal("a cancellation did not cancel the call in flight on its own replica")
	}
	await.Recv(t, answer, "the call's answer")
	if got := len(b.publishes()); got != 6 {
		t.Errorf("%d cancellations published, want 6: the last one's call was in flight locally", got)
	}

	// Shutdown ends the subscriptions.
	a.Shutdown(context.Background())
	bSrv.Shutdown(context.Background())
	if n := b.subscribers(); n != 0 {
		t.Errorf("%d subscribers after Shutdown, want 0", n)
	}
}

// TestCancellationsDown: while Publish fails or hangs, a cancellation is
// answered at once and cancels this process's calls only; the failure is
// logged once, and its end once.
func TestCancellationsDown(t *testing.T) {
	b := newBus()
	b.fail = errors.New("bus down")
	var logs syncbuf.Buffer
	d := newDeps("a")
	hs := startHTTP(t, newTestServer(t, server.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}, d), server.HTTPOptions{
		Cancellations: b.member(),
	})
	for range 3 {
		postCancel(t, hs.URL(), secretToken, `"elsewhere"`)
	}
	waitFor(t, "the failure logged", func() bool { return strings.Contains(logs.String(), "bus down") })

	// A call in flight here is still cancelled while the bus is down.
	answer := startCall(t, hs.URL(), secretToken, `1`)
	await.Recv(t, d.started, "the call's start")
	postCancel(t, hs.URL(), secretToken, `1`)
	select {
	case <-d.causes:
	case <-time.After(5 * time.Second):
		close(d.release)
		t.Fatal("with the bus down, a cancellation did not cancel the call in flight here")
	}
	await.Recv(t, answer, "the call's answer")

	b.mu.Lock()
	b.fail = nil
	b.mu.Unlock()
	postCancel(t, hs.URL(), secretToken, `"elsewhere"`)
	waitFor(t, "the recovery logged", func() bool { return strings.Contains(logs.String(), "works again") })
	if n := strings.Count(logs.String(), "failed"); n != 1 {
		t.Errorf("the failure logged %d times, want once:\n%s", n, logs.String())
	}

	// A Publish that hangs holds no request.
	b.mu.Lock()
	b.block = true
	b.mu.Unlock()
	start := time.Now()
	for range 3 {
		postCancel(t, hs.URL(), secretToken, `"elsewhere"`)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("3 cancellations took %v while Publish hangs: a request waited for it", took)
	}
}

// TestStatelessCallEndsWithItsRequest: over stateless HTTP, a call whose
// request ends (the client goes away, sending no notifications/cancelled)
// is cancelled: a 2025 client's by toolroute (the request's end is its
// cause), a 2026-07-28 client's by the SDK (which toolroute relies on).
func TestStatelessCallEndsWithItsRequest(t *testing.T) {
	for _, version := range []string{v2025, v2026} {
		t.Run(version, func(t *testing.T) {
			d := newDeps("a")
			hs := startHTTP(t, newTestServer(t, server.Options{}, d), server.HTTPOptions{})
			ctx, leave := context.WithCancel(context.Background())
			defer leave()
			meta := "" // a 2026-07-28 request says who sends it
			if version == v2026 {
				meta = `,"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v2026 + `","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"wait","arguments":{}`+meta+`}}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set("Authorization", "Bearer "+secretToken)
			req.Header.Set("Mcp-Protocol-Version", version)
			if version == v2026 {
				req.Header.Set("Mcp-Method", "tools/call")
				req.Header.Set("Mcp-Name", "wait")
			}
			done := make(chan string, 1)
			go func() {
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					done <- err.Error()
					return
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				done <- resp.Status + " " + string(b)
			}()
			select {
			case <-d.started:
			case answer := <-done:
				t.Fatalf("the call did not start: %s", answer)
			}
			leave()
			select {
			case cause := <-d.causes:
				if version == v2025 && !errors.Is(cause, server.ErrRequestEndedForTest) {
					t.Errorf("cause %v, want the request's end", cause)
				}
			case <-time.After(5 * time.Second):
				close(d.release)
				t.Fatal("the call went on after its request ended")
			}
			await.Recv(t, done, "the call's end")
		})
	}
}
