package registry_test

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// benchArgs and benchResult carry only json tags, so that the SDK's own
// schema inference (the raw side of the benchmarks) works on them.
type benchArgs struct {
	ID    string `json:"id"`
	Limit int    `json:"limit,omitempty"`
}

type benchResult struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Tags  []string `json:"tags,omitempty"`
}

// benchBody is the work of every benchmarked handler, toolroute's and raw.
func benchBody(in benchArgs) (benchResult, error) {
	return benchResult{ID: in.ID, Name: "item " + in.ID, Count: in.Limit}, nil
}

func benchHandler(ctx context.Context, d *Deps, req *mcp.CallToolRequest, in benchArgs) (benchResult, error) {
	return benchBody(in)
}

func rawHandler(ctx context.Context, req *mcp.CallToolRequest, in benchArgs) (*mcp.CallToolResult, benchResult, error) {
	out, err := benchBody(in)
	return nil, out, err
}

const benchTools = 1000

var benchNames = func() []string {
	names := make([]string, benchTools)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%04d", i)
	}
	return names
}()

func benchTool(name string) tool.Tool[*Deps] {
	return tool.Tool[*Deps]{
		Name:             name,
		Description:      "Fetch one item of the benchmark service.",
		ServiceKey:       "bench",
		VisibilityRoutes: []tool.Route{tool.ServiceRoute("bench", "GET", "/api/v1/items/{id}")},
		Behaviour:        behaviour.ReadOnly,
		// Handle reflects the schemas, as each tool file's init does.
		Handler: tool.Handle(benchHandler),
	}
}

// BenchmarkInstall1000 builds a server with 1,000 tools: toolroute
// (New, Register of each tool with its own Handle, Install) against the
// SDK alone (mcp.AddTool with inferred schemas).
func BenchmarkInstall1000(b *testing.B) {
	impl := &mcp.Implementation{Name: "bench", Version: "v0.0.1"}
	b.Run("toolroute", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r := registry.New[*Deps]()
			for _, name := range benchNames {
				r.Register(benchTool(name))
			}
			s := mcp.NewServer(impl, nil)
			r.Install(s, &Deps{})
		}
	})
	b.Run("raw", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			s := mcp.NewServer(impl, nil)
			for _, name := range benchNames {
				mcp.AddTool(s, &mcp.Tool{
					Name:        name,
					Description: "Fetch one item of the benchmark service.",
				}, rawHandler)
			}
		}
	})

	// With a process-wide mcp.SchemaCache, as a server that makes a new
	// *mcp.Server per request (stateless HTTP) would use: the SDK resolves
	// raw's schemas once, by Go type (toolroute resolves its own once per
	// Go type, at Handle, and adds them with their JSON: the cache is
	// not used).
	b.Run("toolroute+SchemaCache", func(b *testing.B) {
		opts := &mcp.ServerOptions{SchemaCache: mcp.NewSchemaCache()}
		b.ReportAllocs()
		for b.Loop() {
			r := registry.New[*Deps]()
			for _, name := range benchNames {
				r.Register(benchTool(name))
			}
			r.Install(mcp.NewServer(impl, opts), &Deps{})
		}
	})
	b.Run("raw+SchemaCache", func(b *testing.B) {
		opts := &mcp.ServerOptions{SchemaCache: mcp.NewSchemaCache()}
		b.ReportAllocs()
		for b.Loop() {
			s := mcp.NewServer(impl, opts)
			for _, name := range benchNames {
				mcp.AddTool(s, &mcp.Tool{
					Name:        name,
					Description: "Fetch one item of the benchmark service.",
				}, rawHandler)
			}
		}
	})
	// Install alone of an existing registry on a new server with a
	// SchemaCache: the per-request cost of a stateless server.
	b.Run("Install+SchemaCache", func(b *testing.B) {
		opts := &mcp.ServerOptions{SchemaCache: mcp.NewSchemaCache()}
		r := registry.New[*Deps]()
		for _, name := range benchNames {
			r.Register(benchTool(name))
		}
		b.ReportAllocs()
		for b.Loop() {
			r.Install(mcp.NewServer(impl, opts), &Deps{})
		}
	})
}

// BenchmarkCall makes one tools/call over in-memory transports: through
// Install's wrapper against the same handler body added with raw
// mcp.AddTool.
func BenchmarkCall(b *testing.B) {
	impl := &mcp.Implementation{Name: "bench", Version: "v0.0.1"}
	run := func(b *testing.B, s *mcp.Server) {
		// Whichever side ran first used to pay for the background
		// scavenging of the large heaps BenchmarkInstall1000 leaves:
		// return them to the OS before timing.
		debug.FreeOSMemory()
		ctx := context.Background()
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(impl, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer func() {
			cs.Close()
			ss.Wait()
		}()
		params := &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "42", "limit": 3}}
		b.ReportAllocs()
		for b.Loop() {
			res, err := cs.CallTool(ctx, params)
			if err != nil || res.IsError {
				b.Fatalf("call: %v %v", err, res)
			}
		}
	}
	b.Run("toolroute", func(b *testing.B) {
		r := registry.New[*Deps]()
		r.Register(benchTool("get_item"))
		s := mcp.NewServer(impl, nil)
		r.Install(s, &Deps{})
		run(b, s)
	})
	b.Run("raw", func(b *testing.B) {
		s := mcp.NewServer(impl, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "get_item", Description: "Fetch one item of the benchmark service."}, rawHandler)
		run(b, s)
	})
}

// The benchmarks below alternate toolroute and raw in one loop and report
// each side's time per operation and their ratio: on a shared, noisy
// machine, load drifts between two benchmarks run one after the other,
// but hits both sides of one loop alike.

// BenchmarkInstall1000Interleaved is BenchmarkInstall1000, interleaved:
// Register of 1,000 tools (each with its own tool.Handle) and Install
// against 1,000 mcp.AddTool, both on a new server, without a schema
// cache and with one shared by every server (the SDK then resolves raw's
// schemas once, by Go type; toolroute resolves its own once, at Handle).
// Each side starts on a collected heap, so that it pays for the
// collection of its own garbage only: go-sdk's AddTool decodes every
// input schema with a fresh 32 KiB buffer, and whichever side ran second
// would otherwise pay for the first's.
func BenchmarkInstall1000Interleaved(b *testing.B) {
	impl := &mcp.Implementation{Name: "bench", Version: "v0.0.1"}
	for _, bc := range []struct {
		name  string
		cache *mcp.SchemaCache
	}{{"nocache", nil}, {"SchemaCache", mcp.NewSchemaCache()}} {
		b.Run(bc.name, func(b *testing.B) {
			opts := &mcp.ServerOptions{SchemaCache: bc.cache}
			var trs, raws []time.Duration
			var trCPU, rawCPU time.Duration // process CPU time, GC included
			for b.Loop() {
				toolroute := func() {
					runtime.GC() // each side collects its own garbage only
					start, cpu := time.Now(), benchtools.CPUTime()
					r := registry.New[*Deps]()
					for _, name := range benchNames {
						r.Register(benchTool(name))
					}
					r.Install(mcp.NewServer(impl, opts), &Deps{})
					trs = append(trs, time.Since(start))
					trCPU += benchtools.CPUTime() - cpu
				}
				sdk := func() {
					runtime.GC()
					start, cpu := time.Now(), benchtools.CPUTime()
					s := mcp.NewServer(impl, opts)
					for _, name := range benchNames {
						mcp.AddTool(s, &mcp.Tool{Name: name, Description: "Fetch one item of the benchmark service."}, rawHandler)
					}
					raws = append(raws, time.Since(start))
					rawCPU += benchtools.CPUTime() - cpu
				}
				// Alternate which side goes first.
				if len(trs)%2 == 0 {
					toolroute()
					sdk()
				} else {
					sdk()
					toolroute()
				}
			}
			// Medians: robust to the pauses of a shared machine.
			slices.Sort(trs)
			slices.Sort(raws)
			tr, raw := trs[len(trs)/2], raws[len(raws)/2]
			b.ReportMetric(float64(tr.Nanoseconds()), "toolroute-ns/op")
			b.ReportMetric(float64(raw.Nanoseconds()), "raw-ns/op")
			b.ReportMetric(float64(tr)/float64(raw), "toolroute/raw")
			if rawCPU > 0 {
				b.ReportMetric(float64(trCPU)/float64(rawCPU), "cpu-toolroute/raw")
			}
		})
	}
}

// BenchmarkCallInterleaved is BenchmarkCall, interleaved.
func BenchmarkCallInterleaved(b *testing.B) {
	impl := &mcp.Implementation{Name: "bench", Version: "v0.0.1"}
	ctx := context.Background()
	session := func(s *mcp.Server) *mcp.ClientSession {
		ct, st := mcp.NewInMemoryTransports()
		ss, err := s.Connect(ctx, st, nil)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(impl, nil).Connect(ctx, ct, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() {
			cs.Close()
			ss.Wait()
		})
		return cs
	}
	r := registry.New[*Deps]()
	r.Register(benchTool("get_item"))
	trServer := mcp.NewServer(impl, nil)
	r.Install(trServer, &Deps{})
	rawServer := mcp.NewServer(impl, nil)
	mcp.AddTool(rawServer, &mcp.Tool{Name: "get_item", Description: "Fetch one item of the benchmark service."}, rawHandler)
	trSession, rawSession := session(trServer), session(rawServer)

	params := &mcp.CallToolParams{Name: "get_item", Arguments: map[string]any{"id": "42", "limit": 3}}
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
		return time.Since(start)
	}
	var tr, raw time.Duration
	i := 0
	for b.Loop() {
		// Alternate which side goes first.
		if i%2 == 0 {
			tr += call(trSession)
			raw += call(rawSession)
		} else {
			raw += call(rawSession)
			tr += call(trSession)
		}
		i++
	}
	reportPair(b, tr, raw)
}

func reportPair(b *testing.B, tr, raw time.Duration) {
	b.ReportMetric(float64(tr.Nanoseconds())/float64(b.N), "toolroute-ns/op")
	b.ReportMetric(float64(raw.Nanoseconds())/float64(b.N), "raw-ns/op")
	b.ReportMetric(float64(tr)/float64(raw), "toolroute/raw")
}
