package bench

import (
	"bytes"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

const listTools = 1000

// servers are the three servers of the same tools, on loopback.
type servers struct {
	raw, toolroute, mcpgo *httptest.Server
}

func startServers(tb testing.TB, n int) servers {
	s := servers{
		raw:       httptest.NewServer(benchtools.RawHTTP(benchtools.Raw(n, nil))),
		toolroute: httptest.NewServer(benchtools.ToolrouteHTTP(benchtools.Toolroute(n))),
		mcpgo:     httptest.NewServer(MCPGo(n)),
	}
	tb.Cleanup(func() {
		s.raw.Close()
		s.toolroute.Close()
		s.mcpgo.Close()
	})
	return s
}

// TestListsAgree checks that the three servers list the same tools, so
// that the benchmark compares like with like.
func TestListsAgree(t *testing.T) {
	s := startServers(t, 3)
	c := &benchtools.Client{}
	for _, srv := range []struct{ url, token string }{{s.raw.URL, ""}, {s.toolroute.URL, benchtools.Token}, {s.mcpgo.URL, ""}} {
		body, err := c.Post(srv.url+"/mcp", srv.token, benchtools.ListBody)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			for _, part := range []string{`"name":"` + benchtools.Name(i) + `"`, `"readOnlyHint":true`, `"additionalProperties":false`, `"outputSchema"`} {
				if !bytes.Contains(body, []byte(part)) {
					t.Errorf("%s lists no %s: %.400s", srv.url, part, body)
				}
			}
		}
	}
}

// BenchmarkList times the server side of a tools/list of 1,000 tools
// over stateless HTTP (MCP 2025-11-25; raw POSTs, responses read as
// bytes): raw go-sdk, toolroute (filtered for its caller by an
// authz.Policy) and mark3labs/mcp-go, each alone (B/op, allocs/op) and
// all three alternated list by list (median times and ratios).
func BenchmarkList(b *testing.B) {
	s := startServers(b, listTools)
	c := &benchtools.Client{}
	post := func(b *testing.B, url, token string) time.Duration {
		start := time.Now()
		if _, err := c.Post(url+"/mcp", token, benchtools.ListBody); err != nil {
			b.Fatal(err)
		}
		return time.Since(start)
	}
	for _, one := range []struct {
		name, url, token string
	}{{"raw", s.raw.URL, ""}, {"toolroute", s.toolroute.URL, benchtools.Token}, {"mcpgo", s.mcpgo.URL, ""}} {
		b.Run(one.name, func(b *testing.B) {
			post(b, one.url, one.token)
			b.ReportAllocs()
			for b.Loop() {
				post(b, one.url, one.token)
			}
		})
	}
	b.Run("paired", func(b *testing.B) {
		var raw, tr, mg []time.Duration
		for b.Loop() {
			// Rotate the order, so that no server always follows another.
			switch len(raw) % 3 {
			case 0:
				raw, tr, mg = append(raw, post(b, s.raw.URL, "")), append(tr, post(b, s.toolroute.URL, benchtools.Token)), append(mg, post(b, s.mcpgo.URL, ""))
			case 1:
				tr, mg, raw = append(tr, post(b, s.toolroute.URL, benchtools.Token)), append(mg, post(b, s.mcpgo.URL, "")), append(raw, post(b, s.raw.URL, ""))
			default:
				mg, raw, tr = append(mg, post(b, s.mcpgo.URL, "")), append(raw, post(b, s.raw.URL, "")), append(tr, post(b, s.toolroute.URL, benchtools.Token))
			}
		}
		r, t, m := median(raw), median(tr), median(mg)
		b.ReportMetric(float64(r.Nanoseconds()), "raw-ns/list")
		b.ReportMetric(float64(t.Nanoseconds()), "toolroute-ns/list")
		b.ReportMetric(float64(m.Nanoseconds()), "mcpgo-ns/list")
		b.ReportMetric(float64(t)/float64(r), "toolroute/raw")
		b.ReportMetric(float64(t)/float64(m), "toolroute/mcpgo")
	})
}

func median(ds []time.Duration) time.Duration {
	ds = slices.Clone(ds)
	slices.Sort(ds)
	return ds[len(ds)/2]
}
