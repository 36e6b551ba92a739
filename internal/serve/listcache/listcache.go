// Package listcache serves tools/list pages from tool definitions
// encoded once. Nothing here is API.
//
// What it saves: go-sdk encodes every listed definition, and every
// schema in it (jsonschema-go's Schema.MarshalJSON), for every list and
// every caller. A page wrapped by [Cache.Wrap] writes each tool from the
// JSON of its definition, encoded at the first list that showed it:
// for a list of 1,000 tools, about a sixth of a raw go-sdk list's time
// and bytes on the server's side (README, "Performance";
// server.BenchmarkListHTTP measures it end to end, BenchmarkWrap here
// the encoding alone: 8 allocations for 1,000 tools against 26,000, and
// half the bytes and time, encoding/json's copy of a marshaler's output
// included; TestWrapEncodesLess fails if the cache stops saving).
//
// A tools/list still runs the whole call path: the SDK pages its tools,
// authz.Middleware keeps those the caller may see (and marks the page
// cacheScope "private"), the server's Options.Middleware sees the page
// as an *mcp.ListToolsResult. Only its encoding changes: the server's
// chain turns the final page into an [encodedList].
//
// A tool's JSON is keyed by the *mcp.Tool the SDK stores: the SDK never
// changes a stored tool, and replacing a tool (Server.AddTool of the same
// name) stores a new one, encoded again. A middleware that changes a
// listed tool must likewise replace it (a copy) rather than change it in
// place. Tools the cache does not hold are never encoded here; a page
// showing one is encoded whole, as the SDK would.
package listcache

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Cache holds the encoded definitions of a server's tools.
type Cache struct {
	byName map[string]*atomic.Pointer[encodedTool] // fixed at New
}

// encodedTool is one definition and its JSON.
type encodedTool struct {
	tool *mcp.Tool
	json []byte
}

// New returns a cache of the tools of these names: the tools a server's
// installers describe (others are never encoded here).
func New(names []string) *Cache {
	l := &Cache{byName: make(map[string]*atomic.Pointer[encodedTool], len(names))}
	for _, n := range names {
		l.byName[n] = new(atomic.Pointer[encodedTool])
	}
	return l
}

// encoded returns t's JSON, as the SDK writes it: without HTML escaping
// (marshalers' own output, such as a schema's, kept as they write it).
// ok is false for a tool the cache does not hold.
func (l *Cache) encoded(t *mcp.Tool) (_ []byte, ok bool) {
	if t == nil {
		return nil, false
	}
	p := l.byName[t.Name]
	if p == nil {
		return nil, false
	}
	if e := p.Load(); e != nil && e.tool == t {
		return e.json, true
	}
	b, err := marshalNoEscape(t)
	if err != nil {
		return nil, false
	}
	p.Store(&encodedTool{tool: t, json: b})
	return b, true
}

// marshalNoEscape is json.Marshal without HTML escaping, as the SDK's
// JSON-RPC layer encodes.
func marshalNoEscape(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Wrap returns res as an [encodedList] when it is a tools/list page
// whose every tool the cache holds; else res. The server's chain wraps
// the final page, after every middleware, so that each sees an
// *mcp.ListToolsResult.
func (l *Cache) Wrap(res mcp.Result) mcp.Result {
	lr, ok := res.(*mcp.ListToolsResult)
	if !ok || lr == nil {
		return res
	}
	frags := make([][]byte, len(lr.Tools))
	for i, t := range lr.Tools {
		b, ok := l.encoded(t)
		if !ok {
			return res
		}
		frags[i] = b
	}
	return &encodedList{ListToolsResult: *lr, frags: frags}
}

// encodedList is a tools/list page that encodes its tools from their
// JSON encoded once. The SDK may still set the page's result type and
// _meta (through the embedded result) before encoding it.
type encodedList struct {
	mcp.ListToolsResult
	frags [][]byte // the JSON of ListToolsResult.Tools, in order
}

// MarshalJSON writes exactly what encoding the embedded
// *mcp.ListToolsResult writes: its other fields, then "tools" (its last
// field) from the encoded definitions.
func (r *encodedList) MarshalJSON() ([]byte, error) {
	page := r.ListToolsResult
	page.Tools = []*mcp.Tool{}
	head, err := marshalNoEscape(&page)
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(head, []byte(`"tools":[]}`)) {
		return nil, errors.New("listcache: tools/list: the page does not end with its tools")
	}
	head = head[:len(head)-2]
	n := len(head) + len(r.frags) + 2
	for _, f := range r.frags {
		n += len(f)
	}
	out := make([]byte, 0, n)
	out = append(out, head...)
	for i, f := range r.frags {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, f...)
	}
	return append(out, ']', '}'), nil
}
