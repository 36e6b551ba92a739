package listcache

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// page returns a tools/list page of n tools, each with an input schema
// of a few properties, as a registry's tools have, and their names.
func page(n int) (*mcp.ListToolsResult, []string) {
	p := &mcp.ListToolsResult{}
	names := make([]string, n)
	for i := range n {
		names[i] = fmt.Sprintf("tool_%d", i)
		p.Tools = append(p.Tools, &mcp.Tool{
			Name:        names[i],
			Description: "Fetch one catalog item by its id.",
			InputSchema: map[string]any{
				"type":     "object",
				"required": []any{"id"},
				"properties": map[string]any{
					"id":    map[string]any{"type": "string", "minLength": 1, "description": "the item's id"},
					"limit": map[string]any{"type": "integer", "minimum": 1, "maximum": 100},
				},
			},
		})
	}
	return p, names
}

// BenchmarkWrap encodes a page of 1,000 tools as the SDK would ("sdk")
// and from a warm Cache ("cached").
func BenchmarkWrap(b *testing.B) {
	p, names := page(1000)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		c := New(names)
		c.Wrap(p)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(c.Wrap(p)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestWrapEncodesLess guards what the package is for: a page encoded
// from a warm cache allocates a small, fixed number of times, where
// encoding it whole allocates for every definition and schema (measured
// for 100 tools: 7 against 2,601; the bound leaves room).
func TestWrapEncodesLess(t *testing.T) {
	p, names := page(100)
	c := New(names)
	c.Wrap(p)
	sdk := testing.AllocsPerRun(10, func() { json.Marshal(p) })
	cached := testing.AllocsPerRun(10, func() { json.Marshal(c.Wrap(p)) })
	t.Logf("allocs: sdk %.0f, cached %.0f", sdk, cached)
	if cached*10 > sdk {
		t.Errorf("a cached page allocates %.0f times, the whole encoding %.0f: the cache no longer saves the definitions' encoding", cached, sdk)
	}
}
