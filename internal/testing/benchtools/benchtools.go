// Package benchtools builds the servers the project's performance
// benchmarks compare: the same tools (names, descriptions, annotations,
// schemas) served by toolroute (server.New, a caller from a bearer token,
// tools filtered by an in-process authz.Policy) and by a raw go-sdk
// server, and the raw JSON-RPC POSTs that time them over stateless HTTP.
// server's benchmarks and the bench module (which adds mark3labs/mcp-go)
// use it. Nothing here is API, and no non-test code imports it.
package benchtools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"reflect"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/core/schema"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/tool"
)

// Args are a benchmark tool's arguments.
type Args struct {
	ID    string `json:"id" jsonschema:"minLength=1,description=the item's id"`
	Limit int    `json:"limit,omitempty" jsonschema:"minimum=0,description=how many at most"`
}

// Out is a benchmark tool's structured result.
type Out struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags,omitempty"`
}

// Body is every benchmark tool's work, toolroute's and raw.
func Body(in Args) Out { return Out{ID: in.ID, Name: "item " + in.ID, Count: in.Limit} }

// Token is the bearer of the benchmarks' caller (subject "bench", role
// "bench"), which may see every tool.
const Token = "bench-token"

// Name returns the name of tool i.
func Name(i int) string { return fmt.Sprintf("tool_%04d", i) }

// Description returns the description of tool i.
func Description(i int) string {
	return fmt.Sprintf("Fetch one item of collection %d of the benchmark service, by its id.", i)
}

// Path returns the upstream path of tool i's route, under service "bench".
func Path(i int) string { return fmt.Sprintf("/api/v1/c%04d/items/{id}", i) }

// Registry returns a registry of n tools, each with a route of its own.
func Registry(n int) *registry.Registry[struct{}] {
	r := registry.New[struct{}]()
	h := tool.Handle(func(_ context.Context, _ struct{}, _ *mcp.CallToolRequest, in Args) (Out, error) {
		return Body(in), nil
	})
	for i := range n {
		r.Register(tool.Tool[struct{}]{
			Name:             Name(i),
			Title:            "Item",
			Description:      Description(i),
			ServiceKey:       "bench",
			VisibilityRoutes: []tool.Route{tool.ServiceRoute("bench", http.MethodGet, Path(i))},
			Behaviour:        behaviour.ReadOnly,
			Handler:          h,
		})
	}
	return r
}

// Policy is the benchmarks' authorizer: role "bench" may reach every
// route of service "bench", so each list asks it about every tool's route.
func Policy() authz.Authorizer {
	p, err := authz.NewPolicy([]authz.RolePolicy{{Role: "bench", AccessPolicies: []authz.AccessPolicy{
		{Path: "^/bench/api/v1/c[0-9]+/items/", Methods: []string{http.MethodGet}, Effect: "allow"},
	}}})
	if err != nil {
		panic(err)
	}
	return p
}

var discard = slog.New(slog.DiscardHandler)

// Toolroute returns server.New serving n tools, filtered by [Policy].
func Toolroute(n int) *mcp.Server {
	s, err := server.New(server.Options{Authorizer: Policy(), Logger: discard}, server.Install(Registry(n), struct{}{}))
	if err != nil {
		panic(err)
	}
	return s
}

// ToolrouteHTTP serves s at /mcp as server.HTTPServer does (stateless),
// its caller from the bearer [Token].
func ToolrouteHTTP(s *mcp.Server) http.Handler { return toolrouteHTTP(s, false) }

// ToolrouteSDKHTTP is [ToolrouteHTTP] with server.HTTPOptions.SDKTransport:
// go-sdk's streamable HTTP handler alone rather than toolroute's
// transport.
func ToolrouteSDKHTTP(s *mcp.Server) http.Handler { return toolrouteHTTP(s, true) }

func toolrouteHTTP(s *mcp.Server, sdkTransport bool) http.Handler {
	hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Verifier: server.StaticTokens(map[string]authz.Caller{
		Token: {Subject: "bench", Roles: []string{"bench"}},
	}), SDKTransport: sdkTransport}})
	if err != nil {
		panic(err)
	}
	return hs.Handler()
}

// Schemas returns the input and output schemas every benchmark tool has,
// as toolroute reflects them.
func Schemas() (in, out *jsonschema.Schema) {
	i, err := schema.Input(reflect.TypeFor[Args]())
	if err != nil {
		panic(err)
	}
	o, err := schema.Output(reflect.TypeFor[Out]())
	if err != nil {
		panic(err)
	}
	return i.Schema, o.Schema
}

// Raw returns a raw go-sdk server of the same n tools (the same
// definitions and schemas), without authorization. cache may be nil.
func Raw(n int, cache *mcp.SchemaCache) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "raw", Version: "1"}, &mcp.ServerOptions{SchemaCache: cache})
	in, out := Schemas()
	for i := range n {
		mcp.AddTool(s, &mcp.Tool{
			Name: Name(i), Title: "Item", Description: Description(i),
			Annotations: behaviour.ReadOnly.Annotations("Item", false, false),
			InputSchema: in, OutputSchema: out,
		}, func(_ context.Context, _ *mcp.CallToolRequest, a Args) (*mcp.CallToolResult, Out, error) {
			return nil, Body(a), nil
		})
	}
	return s
}

// RawHTTP serves s at /mcp with go-sdk's stateless streamable HTTP
// handler, as toolroute's HTTPServer configures it.
func RawHTTP(s *mcp.Server) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/mcp", mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s },
		&mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	return mux
}

// Version is the protocol version of the benchmarks' raw requests.
const Version = "2025-11-25"

// ListBody is a tools/list request.
var ListBody = []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`)

// CallBody returns a tools/call request of tool name with id "42".
func CallBody(name string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{"id":"42","limit":3}}}`)
}

// NewVersion is MCP 2026-07-28, whose requests name their method (and
// tool) in headers and carry their protocol version in their _meta.
const NewVersion = "2026-07-28"

// Call returns the body of [CallBody] and the headers ([Client.Header])
// of one tools/call of the named tool in protocol version (Version or
// NewVersion; nil headers for Version).
func Call(name, version string) ([]byte, http.Header) {
	if version != NewVersion {
		return CallBody(name), nil
	}
	body := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"` + name + `","arguments":{"id":"42","limit":3},` +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"` + NewVersion + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	return []byte(body), http.Header{"Mcp-Protocol-Version": {NewVersion}, "Mcp-Method": {"tools/call"}, "Mcp-Name": {name}}
}

// Client sends raw JSON-RPC POSTs and reads each response into one
// buffer it reuses, so that a benchmark measures the server rather than
// the client's buffer growth. A Client is not safe for concurrent use.
type Client struct {
	HTTP *http.Client // nil: http.DefaultClient
	// Header is set on every request after the defaults: its
	// Mcp-Protocol-Version, if any, replaces [Version] (see [Call]).
	Header http.Header
	buf    bytes.Buffer
}

// Post sends one JSON-RPC request to url over stateless streamable HTTP
// (MCP [Version]), with token as its bearer ("" for none), and returns the
// response body as bytes, undecoded, valid until the next Post. It fails
// on a status other than 200 and on a body without a result.
func (c *Client) Post(url, token string, body []byte) ([]byte, error) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", Version)
	for k, v := range c.Header {
		req.Header[k] = v
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	c.buf.Reset()
	if _, err := c.buf.ReadFrom(resp.Body); err != nil {
		return nil, err
	}
	b := c.buf.Bytes()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("benchtools: POST %s: %s: %s", url, resp.Status, b)
	}
	if !bytes.Contains(b, []byte(`"result":`)) {
		return nil, fmt.Errorf("benchtools: POST %s: no result: %.300s", url, b)
	}
	return b, nil
}

// Result returns the JSON-RPC result in a response body Post returned
// (plain JSON, or one server-sent event).
func Result(body []byte) (json.RawMessage, error) {
	s := string(body)
	if i := strings.Index(s, "data: "); i >= 0 && !strings.HasPrefix(strings.TrimSpace(s), "{") {
		s = s[i+len("data: "):]
		s = strings.TrimSpace(strings.SplitN(s, "\n\n", 2)[0])
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal([]byte(s), &msg); err != nil {
		return nil, fmt.Errorf("benchtools: response: %w", err)
	}
	return msg.Result, nil
}

// Paired runs base and other alternately, once each per iteration of b
// (the one that goes first alternating too), so that both see the same
// load of a shared machine, and reports the median time of each, as
// "<baseName>-ns/<op>" and "<otherName>-ns/<op>", and their ratio
// other/base as "ratio". Medians are robust to a shared machine's pauses.
//
// It reports too what each side costs the process per op, on average:
// its CPU time (user and system, of every goroutine, while that side
// runs: [CPUTime]) as "<name>-cpu-ns/<op>" and the ratio as "cpu-ratio",
// and the heap objects allocated as "<name>-allocs/<op>". Wall time
// waits for a shared machine's other processes; CPU time tells the work.
// Both process-wide figures count the work other goroutines do meanwhile
// (the garbage collector's, a batch span processor's, a side's work that
// finishes after it returns), which may land on the other side: they
// tell a difference over many iterations, not of one op. Where the CPU
// time cannot be read (not unix) the CPU figures are left out.
func Paired(b *testing.B, op, baseName string, base func() time.Duration, otherName string, other func() time.Duration) {
	var baseSide, otherSide pairedSide
	for b.Loop() {
		if len(baseSide.times)%2 == 0 {
			baseSide.run(base)
			otherSide.run(other)
		} else {
			otherSide.run(other)
			baseSide.run(base)
		}
	}
	n := float64(len(baseSide.times))
	if n == 0 {
		return
	}
	bm, om := median(baseSide.times), median(otherSide.times)
	b.ReportMetric(float64(bm.Nanoseconds()), baseName+"-ns/"+op)
	b.ReportMetric(float64(om.Nanoseconds()), otherName+"-ns/"+op)
	b.ReportMetric(float64(om)/float64(bm), "ratio")
	if baseSide.cpu > 0 && otherSide.cpu > 0 {
		b.ReportMetric(float64(baseSide.cpu.Nanoseconds())/n, baseName+"-cpu-ns/"+op)
		b.ReportMetric(float64(otherSide.cpu.Nanoseconds())/n, otherName+"-cpu-ns/"+op)
		b.ReportMetric(float64(otherSide.cpu)/float64(baseSide.cpu), "cpu-ratio")
	}
	b.ReportMetric(float64(baseSide.allocs)/n, baseName+"-allocs/"+op)
	b.ReportMetric(float64(otherSide.allocs)/n, otherName+"-allocs/"+op)
}

// pairedSide is what one side of [Paired] has cost so far.
type pairedSide struct {
	times  []time.Duration
	cpu    time.Duration // process CPU time while it ran
	allocs uint64        // heap objects allocated while it ran
}

// allocsMetric counts the heap objects the process has allocated; reading
// it stops no goroutine.
const allocsMetric = "/gc/heap/allocs:objects"

func (s *pairedSide) run(f func() time.Duration) {
	sample := []metrics.Sample{{Name: allocsMetric}}
	metrics.Read(sample)
	allocs, cpu := sample[0].Value.Uint64(), CPUTime()
	s.times = append(s.times, f())
	s.cpu += CPUTime() - cpu
	metrics.Read(sample)
	s.allocs += sample[0].Value.Uint64() - allocs
}

// TimedCall returns a function that calls params on cs, fails b on an
// error or an isError result, and returns how long the call took.
func TimedCall(b *testing.B, cs *mcp.ClientSession, params *mcp.CallToolParams) func() time.Duration {
	return func() time.Duration {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), params)
		if err != nil || res.IsError {
			b.Fatalf("call %s: %v %+v", params.Name, err, res)
		}
		return time.Since(start)
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
