package telemetry_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

// TestCacheSources: with both faces of a decision cache decorated, a
// decision the cache answers counts as a hit with source "cache", one it
// asks the policy about as a miss with source "policy".
func TestCacheSources(t *testing.T) {
	e := newEnv(t, envOptions{cache: true})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	for range 2 {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	m := e.collect(t)
	// The first call misses twice: the guard asks about the tool's route
	// (a template), the upstream request about its bound route. The
	// second call hits twice.
	if got, want := points(m[telemetry.MetricAuthzCache]), map[string]int64{"toolroute.authz.cache.result=miss": 2, "toolroute.authz.cache.result=hit": 2}; !maps.Equal(got, want) {
		t.Errorf("cache lookups: %v, want %v", got, want)
	}
	if got, want := points(m[telemetry.MetricAuthzDecisions]), map[string]int64{
		"toolroute.authz.outcome=allow,toolroute.authz.source=policy": 2,
		"toolroute.authz.outcome=allow,toolroute.authz.source=cache":  2,
	}; !maps.Equal(got, want) {
		t.Errorf("decisions: %v, want %v", got, want)
	}
	// One event per decision, at the outermost decorator only, on the
	// span that asked: the first call's two decisions missed the cache,
	// the second's hit it.
	var results []string
	for _, s := range e.spans.Ended() {
		for _, ev := range decisions(s) {
			if ev["toolroute.authz.source"] != "cache" || ev["toolroute.authz.outcome"] != "allow" {
				t.Errorf("span %q: authorization event %v", s.Name(), ev)
			}
			results = append(results, s.Name()+": "+ev["toolroute.authz.cache.result"])
		}
	}
	slices.Sort(results)
	if want := []string{
		"GET /items/v1/items/{id}: hit", "GET /items/v1/items/{id}: miss",
		"tools/call get_item: hit", "tools/call get_item: miss",
	}; !slices.Equal(results, want) {
		t.Errorf("authorization events %q, want %q", results, want)
	}
}

// TestAuditCall checks a tools/call record: the schema version, the
// subject, the decision, the upstream route as a template, the digest of
// the arguments, and neither an argument value nor the bearer anywhere.
func TestAuditCall(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	trail := e.audit.String()
	for _, bad := range []string{itemID, secretBearer} {
		if strings.Contains(trail, bad) {
			t.Errorf("the audit trail holds %q:\n%s", bad, trail)
		}
	}
	recs := e.records(t)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2:\n%s", len(recs), trail)
	}
	call, list := recs[0], recs[1]
	args, _ := json.Marshal(map[string]any{"id": itemID}) // as the client sends them
	sum := sha256.Sum256(args)
	if call.V != telemetry.AuditVersion || call.Event != telemetry.EventCall || call.Subject != viewer.Subject || call.Tool != "get_item" ||
		call.Decision != "allow" || call.Outcome != "ok" || call.ArgsDigest != "sha256:"+hex.EncodeToString(sum[:]) || call.DurationMS <= 0 || len(call.TraceID) != 32 {
		t.Errorf("call record: %+v", call)
	}
	if len(call.Upstream) != 1 || call.Upstream[0] != (telemetry.UpstreamRequest{Method: "GET", Route: "/items/v1/items/{id}", Status: 200}) {
		t.Errorf("call record's upstream: %+v", call.Upstream)
	}
	if list.Event != telemetry.EventList || list.Visible == nil || *list.Visible != 2 || list.Subject != viewer.Subject {
		t.Errorf("list record: %+v (visible %v)", list, list.Visible)
	}
}

// TestAuditKey: with an AuditKey the digest is an HMAC.
func TestAuditKey(t *testing.T) {
	var buf strings.Builder
	tel, err := telemetry.New(telemetry.Options{Audit: telemetry.NewJSONAudit(&buf, nil), AuditKey: []byte("k")})
	if err != nil {
		t.Fatal(err)
	}
	s, err := server.New(server.Options{Authorizer: authz.AllowAll(), Observers: []mcp.Middleware{tel.Middleware()}}, server.Install(testRegistry(), &deps{}))
	if err != nil {
		t.Fatal(err)
	}
	cs := servertest.Connect(t, s, &viewer, servertest.Options{})
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `"args_digest":"hmac-sha256:`) {
		t.Errorf("no keyed digest: %s", buf.String())
	}
}

// TestQuestions counts and audits a permission question asked by
// input_required (MCP 2026-07-28) and by elicitation (2025 clients), and
// their answers.
func TestQuestions(t *testing.T) {
	admin := viewer
	admin.Subject, admin.Roles = "admin@test", []string{"admin"}
	answer := func(_ context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": permission.AllowOnce}}, nil
	}
	for _, version := range []string{"", "2025-11-25"} {
		t.Run("version="+version, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, &mcp.ClientOptions{ElicitationHandler: answer})
			cs := servertest.Connect(t, e.server, &admin, servertest.Options{ProtocolVersion: version, Client: client})
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "delete_item", Arguments: map[string]any{"id": itemID}})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			channel := "input_required"
			if version != "" {
				channel = "elicitation"
			}
			want := map[string]int64{
				"toolroute.question.channel=" + channel + ",toolroute.question.state=asked":    1,
				"toolroute.question.channel=" + channel + ",toolroute.question.state=answered": 1,
			}
			if got := points(e.collect(t)[telemetry.MetricQuestions]); !maps.Equal(got, want) {
				t.Errorf("questions: %v, want %v", got, want)
			}
			var qs []string
			for _, r := range e.records(t) {
				if r.Event == telemetry.EventQuestion {
					if r.Subject != admin.Subject || r.Tool != "delete_item" || r.Channel != channel {
						t.Errorf("question record: %+v", r)
					}
					qs = append(qs, r.Question+"/"+r.Answer)
				}
			}
			wantQs := "asked/,answered/"
			if version != "" {
				wantQs = "asked/,answered/accept"
			}
			if strings.Join(qs, ",") != wantQs {
				t.Errorf("question records %q, want %q", qs, wantQs)
			}
		})
	}
}

// TestSessionDuration: a 2025 client's session (initialize handshake)
// is measured when it ends, in memory and over stateful HTTP; over
// stateless HTTP, where every request has a session of its own, none is.
func TestSessionDuration(t *testing.T) {
	inMemory := func(t *testing.T, e *env) {
		st, ct := mcp.NewInMemoryTransports()
		ss, err := e.server.Connect(authz.WithCaller(context.Background(), viewer), st, nil)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		cs.Close()
		ss.Wait()
	}
	overHTTP := func(stateful bool) func(*testing.T, *env) {
		return func(t *testing.T, e *env) {
			h, err := server.HTTPHandler(e.server, server.HTTPOptions{Stateful: stateful, Verifier: server.StaticTokens(map[string]authz.Caller{"tok": viewer})})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			hc := &http.Client{Transport: headers{"Authorization": "Bearer tok"}}
			defer hc.CloseIdleConnections()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.ListTools(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			cs.Close()
		}
	}
	for _, tt := range []struct {
		name    string
		session func(*testing.T, *env)
		want    map[string]int64
	}{
		{"in-memory", inMemory, map[string]int64{"mcp.protocol.version=2025-11-25": 1}},
		{"stateful HTTP", overHTTP(true), map[string]int64{"mcp.protocol.version=2025-11-25": 1}},
		{"stateless HTTP", overHTTP(false), map[string]int64{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, envOptions{})
			tt.session(t, e)
			if len(tt.want) == 0 {
				// A session's duration is recorded once it is closed, which
				// the client's Close does not wait for: give it time to appear.
				time.Sleep(200 * time.Millisecond)
			}
			deadline := time.Now().Add(5 * time.Second)
			for {
				got := points(e.collect(t)["mcp.server.session.duration"])
				if maps.Equal(got, tt.want) {
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("session duration: %v, want %v", got, tt.want)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// TestHTTPTraceparent: over HTTP, the traceparent header is the server
// span's parent when params._meta has none.
func TestHTTPTraceparent(t *testing.T) {
	e := newEnv(t, envOptions{})
	h, err := server.HTTPHandler(e.server, server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{"tok": viewer})})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	hc := &http.Client{Transport: headers{"Authorization": "Bearer tok", "traceparent": "00-" + remoteTrace + "-" + remoteSpan + "-01"}}
	defer hc.CloseIdleConnections()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v0"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	s := spanNamed(t, e.spans.Ended(), "tools/call whoami")
	if s.Parent().TraceID().String() != remoteTrace || s.Parent().SpanID().String() != remoteSpan {
		t.Errorf("parent %v, want the traceparent header's", s.Parent())
	}
}

type headers map[string]string

func (h headers) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, v := range h {
		r.Header.Set(k, v)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// TestCardinality: 10,000 distinct item ids, and unknown tools of
// made-up names, add no metric series past the first call.
func TestCardinality(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	ctx := context.Background()
	call := func(id string) {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": id}}); err != nil || res.IsError {
			t.Fatalf("call %s: %v %+v", id, err, res)
		}
	}
	call("first")
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "made_up_0", Arguments: map[string]any{}})
	series := func() map[string]int {
		out := map[string]int{}
		for name, m := range e.collect(t) {
			out[name] = len(points(m))
		}
		return out
	}
	before := series()
	// 10,000 in a plain run (go test ./...); fewer under -short and the
	// race detector, which make the calls no different, only slower.
	n := 10_000
	if testing.Short() || raceEnabled {
		n = 1000
	}
	for i := range n {
		call(fmt.Sprintf("id-%d", i))
		if i%1000 == 0 {
			cs.CallTool(ctx, &mcp.CallToolParams{Name: fmt.Sprintf("made_up_%d", i+1), Arguments: map[string]any{}})
		}
	}
	if after := series(); !maps.Equal(before, after) {
		t.Errorf("series per metric before %v, after %d ids %v", before, n, after)
	}
	for name, m := range e.collect(t) {
		for k := range points(m) {
			if strings.Contains(k, "id-") || strings.Contains(k, "made_up") {
				t.Errorf("%s has a label from a caller's value: %s", name, k)
			}
		}
	}
}

// TestDelegatedCaller: an agent acting for a user is told apart from the
// user, in the audit record and on the span: the OAuth client and the
// delegation chain beside the subject.
func TestDelegatedCaller(t *testing.T) {
	e := newEnv(t, envOptions{})
	agent := viewer
	agent.Client, agent.Actors = "billing-agent", []string{"agent-7", "orchestrator"}
	cs := servertest.Connect(t, e.server, &agent, servertest.Options{})
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	recs := e.records(t)
	if len(recs) != 1 || recs[0].Subject != viewer.Subject || recs[0].Client != "billing-agent" || !slices.Equal(recs[0].Actors, agent.Actors) {
		t.Errorf("audit records: %+v", recs)
	}
	a := attrs(spanNamed(t, e.spans.Ended(), "tools/call get_item"))
	if a["enduser.id"] != viewer.Subject || a["toolroute.caller.client"] != "billing-agent" || a["toolroute.caller.actors"] != `["agent-7","orchestrator"]` {
		t.Errorf("server span: %v", a)
	}
	// The user acting itself carries neither.
	cs = servertest.Connect(t, e.server, &viewer, servertest.Options{})
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	if recs := e.records(t); len(recs) != 2 || recs[1].Client != "" || recs[1].Actors != nil {
		t.Errorf("the user's own record: %+v", recs[len(recs)-1])
	}
}
