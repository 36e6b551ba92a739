package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/telemetry"
	"github.com/toolroute/toolroute/tool"
)

const (
	secretBearer = "s3cret-bearer-value"
	itemID       = "itm-4711"
)

var (
	getRoute    = tool.ServiceRoute("items", http.MethodGet, "/v1/items/{id}")
	deleteRoute = tool.ServiceRoute("items", http.MethodDelete, "/v1/items/{id}")
	viewer      = authz.Caller{Subject: "viewer@test", Roles: []string{"viewer"}, Bearer: secretBearer}
)

// testPolicy lets viewers read items and admins delete them.
func testPolicy(t testing.TB) *authz.Policy {
	p, err := authz.ParsePolicy([]byte(`[
	 {"role": "viewer", "accessPolicies": [{"path": "^/items/v1/items/[^/]+$", "methods": ["GET"], "effect": "allow"}]},
	 {"role": "admin", "accessPolicies": [{"path": "^/items/v1/items/[^/]+$", "methods": ["GET", "DELETE"], "effect": "allow"}]}]`))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// upstream is a real HTTP upstream that remembers the traceparent
// headers it received.
type upstream struct {
	*httptest.Server
	mu           sync.Mutex
	traceparents []string
	norecord     bool // remember nothing: a benchmark's upstream, whose memory must not grow with every call
}

func newUpstream(t testing.TB) *upstream {
	u := &upstream{}
	u.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !u.norecord {
			u.mu.Lock()
			u.traceparents = append(u.traceparents, r.Header.Get("traceparent"))
			u.mu.Unlock()
		}
		if strings.HasSuffix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id": %q}`, strings.TrimPrefix(r.URL.Path, "/v1/items/"))
	}))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) received() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.traceparents...)
}

type deps struct {
	client  *http.Client
	base    string
	confirm *permission.Checker
}

type idArgs struct {
	ID string `json:"id" jsonschema:"minLength=1"`
}

type item struct {
	ID string `json:"id"`
}

type noArgs struct{}

type whoami struct {
	Subject string `json:"subject"`
}

// testRegistry has a mapped tool calling the upstream (get_item), one
// only admins see (delete_item, which asks for confirmation) and a
// local one (whoami).
func testRegistry() *registry.Registry[*deps] {
	r := registry.New[*deps]()
	r.Register(tool.Tool[*deps]{
		Name: "get_item", Description: "Get an item.", ServiceKey: "items", Behaviour: behaviour.ReadOnly,
		VisibilityRoutes: []tool.Route{getRoute},
		Handler: tool.Handle(func(ctx context.Context, d *deps, _ *mcp.CallToolRequest, in idArgs) (item, error) {
			bound, err := getRoute.Bind(map[string]string{"id": in.ID})
			if err != nil {
				return item{}, err
			}
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.base+strings.TrimPrefix(bound.URI, "/items"), nil)
			resp, err := d.client.Do(req)
			if err != nil {
				return item{}, err
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return item{}, fmt.Errorf("upstream answered %s", resp.Status)
			}
			var it item
			return it, json.NewDecoder(resp.Body).Decode(&it)
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "delete_item", Description: "Delete an item.", ServiceKey: "items", Behaviour: behaviour.Destructive,
		VisibilityRoutes: []tool.Route{deleteRoute},
		Handler: tool.Handle(func(ctx context.Context, d *deps, req *mcp.CallToolRequest, in idArgs) (item, error) {
			if _, err := d.confirm.Check(ctx, req, permission.Request{
				Subjects: []string{"item:" + in.ID}, Capabilities: []string{"delete"}, Reason: "Delete?", NoRemember: true,
			}); err != nil {
				return item{}, err
			}
			return item{ID: in.ID}, nil
		}),
	})
	r.Register(tool.Tool[*deps]{
		Name: "whoami", Description: "Who am I.", Local: true, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, _ *deps, _ *mcp.CallToolRequest, _ noArgs) (whoami, error) {
			c, _ := authz.CallerFromContext(ctx)
			return whoami{Subject: c.Subject}, nil
		}),
	})
	return r
}

// env is a server with telemetry recorded in memory.
type env struct {
	spans    *tracetest.SpanRecorder
	reader   *sdkmetric.ManualReader
	tel      *telemetry.Telemetry
	audit    *syncbuf.Buffer
	upstream *upstream
	server   *mcp.Server
}

type envOptions struct {
	cache      bool                            // decorate a decision cache around the policy
	inner      authz.Authorizer                // instead of the test policy
	middleware []mcp.Middleware                // the server's Options.Middleware
	registry   func(*registry.Registry[*deps]) // adds tools to testRegistry's
	sampler    sdktrace.Sampler                // nil: the SDK's default
}

func newEnv(t testing.TB, o envOptions) *env {
	e := &env{spans: tracetest.NewSpanRecorder(), reader: sdkmetric.NewManualReader(), audit: &syncbuf.Buffer{}, upstream: newUpstream(t)}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(e.spans)}
	if o.sampler != nil {
		topts = append(topts, sdktrace.WithSampler(o.sampler))
	}
	tp := sdktrace.NewTracerProvider(topts...)
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(e.reader))
	t.Cleanup(func() { tp.Shutdown(context.Background()); mp.Shutdown(context.Background()) })
	var err error
	e.tel, err = telemetry.New(telemetry.Options{TracerProvider: tp, MeterProvider: mp, Audit: telemetry.NewJSONAudit(e.audit, nil)})
	if err != nil {
		t.Fatal(err)
	}
	var inner authz.Authorizer = testPolicy(t)
	if o.inner != nil {
		inner = o.inner
	}
	var a authz.Authorizer = e.tel.Authorizer(inner, telemetry.SourcePolicy)
	if o.cache {
		a = e.tel.Authorizer(authz.Cached(a, time.Minute, 100), telemetry.SourceCache)
	}
	d := &deps{
		client:  &http.Client{Transport: e.tel.Transport(authz.Transport(http.DefaultTransport, "items", e.upstream.URL, a, authz.Options{}), "items")},
		base:    e.upstream.URL,
		confirm: permission.New(permission.Options{}),
	}
	reg := testRegistry()
	if o.registry != nil {
		o.registry(reg)
	}
	e.server, err = server.New(server.Options{Authorizer: a, Observers: []mcp.Middleware{e.tel.Middleware()}, Middleware: o.middleware}, server.Install(reg, d))
	if err != nil {
		t.Fatal(err)
	}
	e.server.AddSendingMiddleware(e.tel.SendingMiddleware())
	return e
}

// collect reads the metrics.
func (e *env) collect(t testing.TB) map[string]metricdata.Metrics {
	t.Helper()
	return collect(t, e.reader)
}

// collect reads the metrics of r by name.
func collect(t testing.TB, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

// points returns a metric's data points as "k=v,k=v" → count (sum for
// counters, count for histograms).
func points(m metricdata.Metrics) map[string]int64 {
	out := map[string]int64{}
	key := func(s attribute.Set) string {
		var parts []string
		for _, kv := range s.ToSlice() {
			parts = append(parts, string(kv.Key)+"="+kv.Value.Emit())
		}
		return strings.Join(parts, ",")
	}
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] += p.Value
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			out[key(p.Attributes)] += int64(p.Count)
		}
	}
	return out
}

// records parses the audit trail.
func (e *env) records(t testing.TB) []telemetry.Record {
	t.Helper()
	var out []telemetry.Record
	dec := json.NewDecoder(strings.NewReader(e.audit.String()))
	for dec.More() {
		var r telemetry.Record
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}
