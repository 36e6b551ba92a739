package telemetry_test

import (
	"context"
	"maps"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

const (
	remoteTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	remoteSpan  = "00f067aa0ba902b7"
)

func attrs(s sdktrace.ReadOnlySpan) map[string]string {
	out := map[string]string{}
	for _, kv := range s.Attributes() {
		out[string(kv.Key)] = kv.Value.Emit()
	}
	return out
}

// decisions returns the attributes of the authorization events on s.
func decisions(s sdktrace.ReadOnlySpan) []map[string]string {
	var out []map[string]string
	for _, ev := range s.Events() {
		if ev.Name != "toolroute.authorize" {
			continue
		}
		a := map[string]string{}
		for _, kv := range ev.Attributes {
			a[string(kv.Key)] = kv.Value.Emit()
		}
		out = append(out, a)
	}
	return out
}

func spanNamed(t *testing.T, spans []sdktrace.ReadOnlySpan, name string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == name {
			return s
		}
	}
	var names []string
	for _, s := range spans {
		names = append(names, s.Name())
	}
	t.Fatalf("no span %q among %q", name, names)
	return nil
}

// noSecrets fails if any attribute of any span holds the bearer or an
// argument value.
func noSecrets(t *testing.T, spans []sdktrace.ReadOnlySpan, values ...string) {
	t.Helper()
	for _, s := range spans {
		for k, v := range attrs(s) {
			for _, bad := range append(values, secretBearer) {
				if strings.Contains(v, bad) || strings.Contains(s.Name(), bad) {
					t.Errorf("span %q: attribute %s=%q holds %q", s.Name(), k, v, bad)
				}
			}
		}
	}
}

// TestCallSpanTree: a tools/call whose params._meta carries a
// traceparent makes a server span under that remote parent and an
// upstream client span under it, and no other span, in one trace; each
// authorization decision is an event on the span that asked; and the
// upstream receives the trace context of its span.
func TestCallSpanTree(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	params := &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID},
		Meta: mcp.Meta{"traceparent": "00-" + remoteTrace + "-" + remoteSpan + "-01"}}
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	spans := e.spans.Ended()
	srv := spanNamed(t, spans, "tools/call get_item")
	if srv.SpanKind() != trace.SpanKindServer || srv.Parent().TraceID().String() != remoteTrace || srv.Parent().SpanID().String() != remoteSpan || !srv.Parent().IsRemote() {
		t.Errorf("server span: kind %v, parent %v", srv.SpanKind(), srv.Parent())
	}
	a := attrs(srv)
	for k, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_item", "gen_ai.operation.name": "execute_tool",
		"enduser.id": viewer.Subject, "mcp.protocol.version": mcp.SupportedProtocolVersions()[0],
	} {
		if a[k] != want {
			t.Errorf("server span %s = %q, want %q", k, a[k], want)
		}
	}
	if _, ok := a["error.type"]; ok {
		t.Errorf("a successful call has error.type %q", a["error.type"])
	}
	// The guard's decision is an event on the server span, the upstream
	// request's on the upstream span: no span of their own.
	up := spanNamed(t, spans, "GET /items/v1/items/{id}")
	for _, s := range []sdktrace.ReadOnlySpan{srv, up} {
		evs := decisions(s)
		if len(evs) != 1 {
			t.Errorf("span %q: %d authorization events, want 1", s.Name(), len(evs))
			continue
		}
		if got := evs[0]; got["toolroute.authz.source"] != "policy" || got["toolroute.authz.outcome"] != "allow" || got["toolroute.authz.routes"] != "1" {
			t.Errorf("span %q: authorization event %v", s.Name(), got)
		}
	}
	var inTrace []string
	for _, s := range spans {
		if s.SpanContext().TraceID().String() == remoteTrace {
			inTrace = append(inTrace, s.Name())
		}
	}
	if len(inTrace) != 2 {
		t.Errorf("the call's trace has spans %q, want the server span and the upstream span", inTrace)
	}
	if up.SpanKind() != trace.SpanKindClient || up.SpanContext().TraceID().String() != remoteTrace {
		t.Errorf("upstream span: kind %v, trace %v", up.SpanKind(), up.SpanContext().TraceID())
	}
	if a := attrs(up); a["url.template"] != "/items/v1/items/{id}" || a["http.response.status_code"] != "200" || a["http.request.method"] != "GET" {
		t.Errorf("upstream span attributes: %v", a)
	}
	if !descends(spans, up, srv) {
		t.Errorf("the upstream span does not descend from the server span")
	}
	got := e.upstream.received()
	want := "00-" + remoteTrace + "-" + up.SpanContext().SpanID().String() + "-01"
	if len(got) != 1 || got[0] != want {
		t.Errorf("upstream received traceparent %q, want %q", got, want)
	}
	noSecrets(t, spans, itemID)
}

// startSampler samples every span, and remembers what it was shown of
// each when it started: its name and attributes.
type startSampler struct {
	mu   sync.Mutex
	seen map[string]map[string]string // span name → attributes
}

func (s *startSampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	a := map[string]string{}
	for _, kv := range p.Attributes {
		a[string(kv.Key)] = kv.Value.Emit()
	}
	s.mu.Lock()
	if s.seen == nil {
		s.seen = map[string]map[string]string{}
	}
	s.seen[p.Name] = a
	s.mu.Unlock()
	return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
}

func (s *startSampler) Description() string { return "startSampler" }

func (s *startSampler) shown(name string) (map[string]string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	a, ok := s.seen[name]
	return a, ok
}

// TestSamplerSeesStart: what is known of a request when it arrives is
// on its span when the span starts, where a sampler sees it: the server
// span's name and MCP attributes (named after its tool from the tool's
// second call on: the first one tells that the server has it), and the
// upstream span's name, route template, method and server.
func TestSamplerSeesStart(t *testing.T) {
	sampler := &startSampler{}
	e := newEnv(t, envOptions{sampler: sampler})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	for range 2 {
		if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	check := func(name string, want map[string]string) {
		t.Helper()
		got, ok := sampler.shown(name)
		if !ok {
			t.Fatalf("the sampler was shown no span %q", name)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("span %q at its start: %s = %q, want %q (all: %v)", name, k, got[k], v, got)
			}
		}
	}
	check("tools/call get_item", map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "get_item", "gen_ai.operation.name": "execute_tool",
		"enduser.id": viewer.Subject, "mcp.protocol.version": mcp.SupportedProtocolVersions()[0],
	})
	host, port, _ := strings.Cut(strings.TrimPrefix(e.upstream.URL, "http://"), ":")
	check("GET /items/v1/items/{id}", map[string]string{
		"http.request.method": "GET", "url.template": "/items/v1/items/{id}", "toolroute.service": "items",
		"server.address": host, "server.port": port,
	})
}

// TestUnsampled: a request whose trace is not sampled is measured and
// audited like any other, and the upstream still receives its trace
// context, unsampled, so that it does not sample either.
func TestUnsampled(t *testing.T) {
	e := newEnv(t, envOptions{sampler: sdktrace.NeverSample()})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if spans := e.spans.Ended(); len(spans) != 0 {
		t.Errorf("%d spans recorded, want none", len(spans))
	}
	got := e.upstream.received()
	if len(got) != 1 || !strings.HasPrefix(got[0], "00-") || !strings.HasSuffix(got[0], "-00") {
		t.Errorf("upstream received traceparent %q, want one unsampled", got)
	}
	v := mcp.SupportedProtocolVersions()[0]
	if ops := points(e.collect(t)["mcp.server.operation.duration"]); ops["gen_ai.tool.name=get_item,mcp.method.name=tools/call,mcp.protocol.version="+v] != 1 {
		t.Errorf("operation duration: %v", ops)
	}
	if recs := e.records(t); len(recs) != 1 || recs[0].Tool != "get_item" || recs[0].Outcome != "ok" || len(recs[0].Upstream) != 1 {
		t.Errorf("audit: %+v", recs)
	}
}

// descends reports whether s is under ancestor.
func descends(spans []sdktrace.ReadOnlySpan, s, ancestor sdktrace.ReadOnlySpan) bool {
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, x := range spans {
		byID[x.SpanContext().SpanID()] = x
	}
	for cur := s; cur != nil; cur = byID[cur.Parent().SpanID()] {
		if cur.Parent().SpanID() == ancestor.SpanContext().SpanID() {
			return true
		}
	}
	return false
}

// TestRefusedAndUnknown: a hidden tool's call is observed (it never
// reaches Options.Middleware) as denied, under its name; an unknown
// tool's name reaches no metric attribute.
func TestRefusedAndUnknown(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	for _, name := range []string{"delete_item", "no_such_tool"} {
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"id": itemID}}); err == nil {
			t.Fatalf("%s: no error", name)
		}
	}
	spans := e.spans.Ended()
	hidden := spanNamed(t, spans, "tools/call delete_item")
	if a := attrs(hidden); a["error.type"] != "-32602" || a["rpc.response.status_code"] != "-32602" || a["enduser.id"] != viewer.Subject {
		t.Errorf("hidden tool's span: %v", a)
	}
	unknown := spanNamed(t, spans, "tools/call")
	if a := attrs(unknown); a["gen_ai.tool.name"] != "no_such_tool" {
		t.Errorf("unknown tool's span: %v", a)
	}
	ops := points(e.collect(t)["mcp.server.operation.duration"])
	v := mcp.SupportedProtocolVersions()[0]
	want := map[string]int64{
		"error.type=-32602,gen_ai.tool.name=delete_item,mcp.method.name=tools/call,mcp.protocol.version=" + v + ",rpc.response.status_code=-32602": 1,
		"error.type=-32602,mcp.method.name=tools/call,mcp.protocol.version=" + v + ",rpc.response.status_code=-32602":                              1,
	}
	for k, n := range want {
		if ops[k] != n {
			t.Errorf("operation duration %s: count %d, want %d (have %v)", k, ops[k], n, ops)
		}
	}
	recs := e.records(t)
	var calls []telemetry.Record
	for _, r := range recs {
		if r.Event == telemetry.EventCall {
			calls = append(calls, r)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("audit: %d call records, want 2: %+v", len(calls), recs)
	}
	if r := calls[0]; r.Tool != "delete_item" || r.Decision != "deny" || r.Outcome != "denied" || r.Subject != viewer.Subject {
		t.Errorf("hidden tool's record: %+v", r)
	}
	if r := calls[1]; r.Tool != "no_such_tool" || r.Decision != "" || r.Outcome != "unknown_tool" {
		t.Errorf("unknown tool's record: %+v", r)
	}
}

// TestMetrics checks toolroute's own instruments after real calls.
func TestMetrics(t *testing.T) {
	e := newEnv(t, envOptions{})
	cs := servertest.Connect(t, e.server, &viewer, servertest.Options{})
	ctx := context.Background()
	for range 3 {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": itemID}}); err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "missing"}}); err != nil || !res.IsError {
		t.Fatalf("call of a missing item: %v %+v", err, res)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	m := e.collect(t)
	v := mcp.SupportedProtocolVersions()[0]
	check := func(metric string, want map[string]int64) {
		t.Helper()
		if got := points(m[metric]); !maps.Equal(got, want) {
			t.Errorf("%s:\n got %v\nwant %v", metric, got, want)
		}
	}
	check("mcp.server.operation.duration", map[string]int64{
		"gen_ai.tool.name=get_item,mcp.method.name=tools/call,mcp.protocol.version=" + v:                       3,
		"error.type=tool_error,gen_ai.tool.name=get_item,mcp.method.name=tools/call,mcp.protocol.version=" + v: 1,
		"mcp.method.name=tools/list,mcp.protocol.version=" + v:                                                 1,
		"mcp.method.name=server/discover,mcp.protocol.version=" + v:                                            1, // the client's handshake
	})
	// Guard and upstream request of each call (8), the list's two distinct
	// routes (one allowed, one denied).
	check(telemetry.MetricAuthzDecisions, map[string]int64{
		"toolroute.authz.outcome=allow,toolroute.authz.source=policy": 9,
		"toolroute.authz.outcome=deny,toolroute.authz.source=policy":  1,
	})
	check(telemetry.MetricUpstreamDuration, map[string]int64{
		"http.request.method=GET,http.response.status_code=200,toolroute.service=items,url.template=/items/v1/items/{id}":                1 + 2,
		"error.type=404,http.request.method=GET,http.response.status_code=404,toolroute.service=items,url.template=/items/v1/items/{id}": 1,
	})
	check(telemetry.MetricCallsActive, map[string]int64{"": 0})
}
