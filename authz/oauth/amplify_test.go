package oauth_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	neturl "net/url"
	"strings"
	"testing"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/flood"
	"github.com/toolroute/toolroute/server"
)

// The floods of the amplification tests: enough requests to show a
// ratio, few enough to take seconds on a shared machine.
const (
	floodBearers = 20_000
	floodWorkers = 32
	floodRepeats = 1_000
)

// TestIntrospectionFlood: strangers' bearers cost the introspection
// endpoint next to nothing. 20,000 random bearers cause at most 1 %
// as many introspections (the per-address limit on refused tokens),
// one unknown token sent 1,000 times at most one (singleflight, then
// the negative cache), and a caller whose token works, from the same
// address, is served meanwhile (its latency is logged).
func TestIntrospectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("floods a server with 21,000 requests")
	}
	op := startOP(t)
	tok := op.Token(t, "olivia")
	v := newIntrospection(t, op, oauth.IntrospectionOptions{})
	url := mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	caller := flood.New(t, url, 1)

	quiet, failed := caller.Latencies(tok, 300, nil)
	if failed > 0 {
		t.Fatalf("%d of the valid caller's %d quiet requests failed", failed, len(quiet))
	}

	before := op.Requests("/oauth/introspect")
	var statuses map[int]int
	start := time.Now()
	under, underFailed := caller.During(tok, 50, func() {
		statuses = flood.New(t, url, floodWorkers).Send(floodBearers, floodWorkers, func(int) string { return rand.Text() })
	})
	elapsed := time.Since(start)
	asked := op.Requests("/oauth/introspect") - before
	t.Logf("%d random bearers in %v (%d workers): answers %v; %d introspections (%.3f %%)",
		floodBearers, elapsed.Round(time.Millisecond), floodWorkers, statuses, asked, 100*float64(asked)/floodBearers)
	qp50, qp99 := flood.Percentile(quiet, 50), flood.Percentile(quiet, 99)
	fp50, fp99 := flood.Percentile(under, 50), flood.Percentile(under, 99)
	t.Logf("valid caller: quiet p50 %v p99 %v (%d requests); under the flood p50 %v p99 %v (%d requests, %d failed)",
		qp50, qp99, len(quiet), fp50, fp99, len(under), underFailed)
	if asked > floodBearers/100 {
		t.Errorf("%d random bearers caused %d introspections, want at most %d", floodBearers, asked, floodBearers/100)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != floodBearers {
		t.Errorf("answers to random bearers: %v, want only 401 and 429", statuses)
	}
	if underFailed > 0 {
		t.Errorf("%d of the valid caller's %d requests under the flood failed", underFailed, len(under))
	}
	// The latencies are reported, not held to a bound: on a shared
	// machine the flood's clients compete with the caller for the CPU.

	// One unknown token, again and again, on a server of its own (this
	// address is over its limit on the first).
	url = mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	before = op.Requests("/oauth/introspect")
	unknown := rand.Text()
	statuses = flood.New(t, url, floodWorkers).Send(floodRepeats, floodWorkers, func(int) string { return unknown })
	asked = op.Requests("/oauth/introspect") - before
	t.Logf("one unknown token %d times: answers %v; %d introspections", floodRepeats, statuses, asked)
	if asked > 1 {
		t.Errorf("one unknown token sent %d times caused %d introspections, want at most 1", floodRepeats, asked)
	}
	if statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests] != floodRepeats {
		t.Errorf("answers to an unknown token: %v, want only 401 and 429", statuses)
	}
}

// A 4xx answer about a stranger's token (an endpoint's 413 for a huge
// one, a firewall's 403 for a hostile-looking one) leaves the verifier
// ready: readiness follows the endpoint's answers to a token of the
// verifier's own. A token past 8 KiB is refused without asking.
func TestIntrospection4xxLeavesReady(t *testing.T) {
	op := startOP(t)
	target, _ := neturl.Parse(op.Issuer)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 2<<10))
		if err != nil {
			http.Error(w, "request entity too large", http.StatusRequestEntityTooLarge)
			return
		}
		if bytes.Contains(body, []byte("script")) {
			http.Error(w, "blocked by the firewall", http.StatusForbidden)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	for _, tc := range []struct {
		name, token string
		outage      bool // the request's answer: an outage (503), else a refused token (401)
	}{
		{"413 for a huge token", strings.Repeat("x", 4<<10), false},
		{"a firewall's 403", "<script>" + rand.Text(), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{URL: front.URL + "/oauth/introspect", ClientID: "toolroute", ClientSecret: serverSecret, Audience: resource})
			if err != nil {
				t.Fatal(err)
			}
			_, err = v.Verify(context.Background(), tc.token, nil)
			var outage *authz.OutageError
			switch {
			case tc.outage && !errors.As(err, &outage):
				t.Errorf("Verify = %v, want an OutageError", err)
			case !tc.outage && !errors.Is(err, server.ErrInvalidToken):
				t.Errorf("Verify = %v, want ErrInvalidToken", err)
			}
			before := op.Requests("/oauth/introspect")
			if err := v.Ready(context.Background()); err != nil {
				t.Fatalf("Ready after a 4xx about a caller's token: %v", err)
			}
			// Ready probes the endpoint with a token of its own; its
			// answer keeps the verifier ready.
			for range 500 { // a bound against a hang, not a timing assertion
				if op.Requests("/oauth/introspect") > before {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if op.Requests("/oauth/introspect") == before {
				t.Fatal("no probe of the endpoint after a 4xx")
			}
			time.Sleep(50 * time.Millisecond) // the probe's answer is recorded
			if err := v.Ready(context.Background()); err != nil {
				t.Errorf("Ready after the probe: %v", err)
			}
		})
	}

	t.Run("a token past 8 KiB", func(t *testing.T) {
		v := newIntrospection(t, op, oauth.IntrospectionOptions{})
		before := op.Requests("/oauth/introspect")
		if _, err := v.Verify(context.Background(), strings.Repeat("x", 8<<10+1), nil); !errors.Is(err, server.ErrInvalidToken) {
			t.Fatalf("Verify = %v, want ErrInvalidToken", err)
		}
		if n := op.Requests("/oauth/introspect") - before; n != 0 {
			t.Errorf("%d introspections of a token past 8 KiB, want none", n)
		}
	})
}

// A caller that gives up (its request's context ends) says nothing about
// the endpoint: the verifier stays ready.
func TestIntrospectionCallerGoneLeavesReady(t *testing.T) {
	op := startOP(t)
	target, _ := neturl.Parse(op.Issuer)
	slow := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(300 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		httputil.NewSingleHostReverseProxy(target).ServeHTTP(w, r)
	}))
	t.Cleanup(slow.Close)
	v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{URL: slow.URL + "/oauth/introspect", ClientID: "toolroute", ClientSecret: serverSecret, Audience: resource})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := v.Verify(ctx, rand.Text(), nil); err == nil {
		t.Fatal("Verify succeeded past its context")
	}
	if err := v.Ready(context.Background()); err != nil {
		t.Errorf("Ready after a caller gave up: %v", err)
	}
}
