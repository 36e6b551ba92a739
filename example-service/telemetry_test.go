package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/toolroute/toolroute/example-service/catalog"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/server/telemetry"
)

var metricsLine = regexp.MustCompile(`Prometheus metrics at (http://\S+)`)

// scrape fetches and parses the Prometheus endpoint.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the scrape: %v", err)
	}
	return families
}

// series returns the family's series as "name=value,..." (without the
// otel_scope_* labels) → count (histograms) or value (counters, gauges).
func series(f *dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	if f == nil {
		return out
	}
	for _, m := range f.Metric {
		var parts []string
		for _, l := range m.Label {
			if !strings.HasPrefix(l.GetName(), "otel_scope_") {
				parts = append(parts, l.GetName()+"="+l.GetValue())
			}
		}
		k := strings.Join(parts, ",")
		switch {
		case m.Histogram != nil:
			out[k] += float64(m.Histogram.GetSampleCount())
		case m.Counter != nil:
			out[k] += m.Counter.GetValue()
		case m.Gauge != nil:
			out[k] += m.Gauge.GetValue()
		}
	}
	return out
}

// TestMetricsEndpoint serves example-service with -metrics-addr and
// -audit, makes real calls over HTTP, and checks the scrape and the
// audit trail: names, labels and counts, and neither a bearer nor a
// concrete path in any label.
func TestMetricsEndpoint(t *testing.T) {
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	url, stderr := start(t, "-metrics-addr", "127.0.0.1:0", "-audit", auditFile)
	if !stderr.waitFor("Prometheus metrics at") {
		t.Fatalf("no metrics endpoint announced:\n%s", stderr)
	}
	metricsURL := metricsLine.FindStringSubmatch(stderr.String())[1]
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	cs := servertest.ConnectHTTP(t, url, "demo-viewer", servertest.Options{})
	for _, id := range []string{"itm-1", "itm-2", "itm-3", "itm-404"} {
		call(t, cs, "get_item", map[string]any{"id": id})
	}
	if _, _, err := call(t, cs, "delete_item", map[string]any{"id": "itm-1"}); err == nil {
		t.Error("a viewer called delete_item")
	}
	servertest.ToolNames(t, cs)

	families := scrape(t, metricsURL)
	v := mcp.SupportedProtocolVersions()[0]
	check := func(name string, want map[string]float64) {
		t.Helper()
		got := series(families[name])
		for k, n := range want {
			if got[k] != n {
				t.Errorf("%s{%s} = %v, want %v (all: %v)", name, k, got[k], n, got)
			}
		}
	}
	check("mcp_server_operation_duration_seconds", map[string]float64{
		"gen_ai_tool_name=get_item,mcp_method_name=tools/call,mcp_protocol_version=" + v:                                                           3,
		"error_type=tool_error,gen_ai_tool_name=get_item,mcp_method_name=tools/call,mcp_protocol_version=" + v:                                     1,
		"error_type=-32602,gen_ai_tool_name=delete_item,mcp_method_name=tools/call,mcp_protocol_version=" + v + ",rpc_response_status_code=-32602": 1,
		"mcp_method_name=tools/list,mcp_protocol_version=" + v:                                                                                     1,
	})
	check("toolroute_upstream_request_duration_seconds", map[string]float64{
		"http_request_method=GET,http_response_status_code=200,toolroute_service=catalog,url_template=/catalog/api/v1/items/{id}":                3,
		"error_type=404,http_request_method=GET,http_response_status_code=404,toolroute_service=catalog,url_template=/catalog/api/v1/items/{id}": 1,
	})
	if got := series(families["toolroute_authz_decisions_total"]); got["toolroute_authz_outcome=allow,toolroute_authz_source=policy"] < 8 ||
		got["toolroute_authz_outcome=deny,toolroute_authz_source=policy"] < 1 {
		t.Errorf("toolroute_authz_decisions_total: %v", got)
	}
	if got := series(families["toolroute_calls_active"]); got[""] != 0 || len(got) != 1 {
		t.Errorf("toolroute_calls_active: %v", got)
	}
	for name, f := range families {
		for _, m := range f.Metric {
			for _, l := range m.Label {
				if v := l.GetValue(); strings.Contains(v, "demo-") || strings.Contains(v, "itm-") || strings.Contains(v, "Bearer") {
					t.Errorf("%s: label %s=%q holds a bearer or a path value", name, l.GetName(), v)
				}
			}
		}
	}

	data, err := os.ReadFile(auditFile)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "demo-viewer") || strings.Contains(string(data), "itm-") {
		t.Errorf("the audit trail holds a bearer or an argument value:\n%s", data)
	}
	var calls, lists int
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var r telemetry.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		if r.V != telemetry.AuditVersion || r.Subject != "viewer@demo" {
			t.Errorf("audit record %+v", r)
		}
		switch r.Event {
		case telemetry.EventCall:
			calls++
		case telemetry.EventList:
			lists++
		}
	}
	if calls != 5 || lists != 1 {
		t.Errorf("audit: %d call and %d list records, want 5 and 1:\n%s", calls, lists, data)
	}
}

// otlpReceiver is an OTLP/HTTP trace receiver: it decodes every export
// request and keeps the spans.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []*tracepb.Span
}

func (o *otlpReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.URL.Path != "/v1/traces" {
		w.WriteHeader(http.StatusOK)
		return
	}
	var req collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			o.spans = append(o.spans, ss.Spans...)
		}
	}
	o.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

func (o *otlpReceiver) named(name string) *tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, s := range o.spans {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// TestOTLPTraces serves example-service with the standard OTEL_*
// environment pointing at an OTLP/HTTP receiver, calls a tool from a
// traced client, and checks the exported span tree client → toolroute →
// RBAC proxy (the decision an event on toolroute's span) and upstream in
// one trace, the upstream having received the trace context.
func TestOTLPTraces(t *testing.T) {
	rcv := &otlpReceiver{}
	collector := httptest.NewServer(rcv)
	defer collector.Close()
	t.Setenv("OTEL_TRACES_EXPORTER", "otlp")
	t.Setenv("OTEL_METRICS_EXPORTER", "none")
	t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")

	var mu sync.Mutex
	var traceparents []string
	h := catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...))
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		traceparents = append(traceparents, r.Header.Get("traceparent"))
		mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	defer upstream.Close()
	url, stderr := start(t, "-upstream", upstream.URL, "-proxy-auth", rbacProxy(t).URL)
	if !stderr.waitFor("traces exported") {
		t.Errorf("tracing not announced:\n%s", stderr)
	}
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)

	// The client's own span, its context sent in params._meta.
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer tp.Shutdown(context.Background())
	ctx, clientSpan := tp.Tracer("client").Start(context.Background(), "agent calls get_item")
	meta := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, meta)
	cs := servertest.ConnectHTTP(t, url, "proxy-reader", servertest.Options{})
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "itm-1"},
		Meta: mcp.Meta{"traceparent": meta["traceparent"]}})
	clientSpan.End()
	if err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	traceID := clientSpan.SpanContext().TraceID()

	var srv, up *tracepb.Span
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if srv, up = rcv.named("tools/call get_item"), rcv.named("GET /catalog/api/v1/items/{id}"); srv != nil && up != nil {
			break
		}
	}
	if srv == nil || up == nil {
		t.Fatalf("spans not exported: server %v, upstream %v", srv, up)
	}
	if string(srv.TraceId) != string(traceID[:]) || string(up.TraceId) != string(traceID[:]) {
		t.Errorf("trace ids: client %s, server %x, upstream %x", traceID, srv.TraceId, up.TraceId)
	}
	clientSpanID := clientSpan.SpanContext().SpanID()
	if string(srv.ParentSpanId) != string(clientSpanID[:]) || srv.Kind != tracepb.Span_SPAN_KIND_SERVER {
		t.Errorf("server span: parent %x (client span %s), kind %v", srv.ParentSpanId, clientSpanID, srv.Kind)
	}
	if !exportedDescends(rcv, up, srv) || up.Kind != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("the upstream span (kind %v) does not descend from the server span", up.Kind)
	}
	// The guard's decision asked the RBAC proxy (a cache miss): it is an
	// event on the server span, and the proxy's HTTP call a client span
	// under the server span, in the call's trace. (The token's
	// verification asked the proxy too, before the request reached MCP:
	// that call is a trace of its own.)
	decided := false
	for _, ev := range srv.Events {
		a := map[string]string{}
		for _, kv := range ev.Attributes {
			a[kv.Key] = kv.Value.GetStringValue()
		}
		if ev.Name == "toolroute.authorize" && a["toolroute.authz.source"] == "cache" && a["toolroute.authz.cache.result"] == "miss" && a["toolroute.authz.outcome"] == "allow" {
			decided = true
		}
	}
	if !decided {
		t.Errorf("no decision event of a cache miss on the server span: %v", srv.Events)
	}
	found := false
	for _, proxyCall := range rcv.all("authz POST") {
		if string(proxyCall.ParentSpanId) == string(srv.SpanId) {
			found = true
		}
	}
	if !found {
		t.Error("no RBAC proxy call under the server span")
	}
	if n := len(rcv.all("toolroute.authorize")); n != 0 {
		t.Errorf("%d decision spans, want none (decisions are events)", n)
	}
	want := fmt.Sprintf("00-%s-%s-01", traceID, hex.EncodeToString(up.SpanId))
	mu.Lock()
	defer mu.Unlock()
	if len(traceparents) != 1 || traceparents[0] != want {
		t.Errorf("the upstream received traceparent %q, want %q", traceparents, want)
	}
}

func (o *otlpReceiver) all(name string) []*tracepb.Span {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []*tracepb.Span
	for _, s := range o.spans {
		if s.Name == name {
			out = append(out, s)
		}
	}
	return out
}

func exportedDescends(o *otlpReceiver, s, ancestor *tracepb.Span) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	byID := map[string]*tracepb.Span{}
	for _, x := range o.spans {
		byID[string(x.SpanId)] = x
	}
	for cur := s; cur != nil; cur = byID[string(cur.ParentSpanId)] {
		if string(cur.ParentSpanId) == string(ancestor.SpanId) {
			return true
		}
	}
	return false
}

// TestProxyTelemetry: with -proxy-auth, decisions are counted by source
// (the RBAC proxy on a cache miss, the cache on a hit) and the cache's
// lookups by result.
func TestProxyTelemetry(t *testing.T) {
	proxy := rbacProxy(t)
	url, stderr := start(t, "-proxy-auth", proxy.URL, "-metrics-addr", "127.0.0.1:0")
	if !stderr.waitFor("Prometheus metrics at") {
		t.Fatalf("no metrics endpoint announced:\n%s", stderr)
	}
	metricsURL := metricsLine.FindStringSubmatch(stderr.String())[1]
	t.Cleanup(http.DefaultTransport.(*http.Transport).CloseIdleConnections)
	cs := servertest.ConnectHTTP(t, url, "proxy-reader", servertest.Options{})
	for range 2 {
		if _, errText, err := call(t, cs, "get_item", map[string]any{"id": "itm-1"}); err != nil || errText != "" {
			t.Fatalf("get_item: %v %s", err, errText)
		}
	}
	families := scrape(t, metricsURL)
	lookups := series(families["toolroute_authz_cache_lookups_total"])
	decisions := series(families["toolroute_authz_decisions_total"])
	if lookups["toolroute_authz_cache_result=hit"] < 1 || lookups["toolroute_authz_cache_result=miss"] < 1 {
		t.Errorf("cache lookups: %v", lookups)
	}
	if decisions["toolroute_authz_outcome=allow,toolroute_authz_source=proxy"] != lookups["toolroute_authz_cache_result=miss"] ||
		decisions["toolroute_authz_outcome=allow,toolroute_authz_source=cache"] != lookups["toolroute_authz_cache_result=hit"] {
		t.Errorf("decisions %v do not match the cache's lookups %v", decisions, lookups)
	}
}
