package listcache

import (
	"bytes"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestWrapEncodesOnce: a page of tools the cache holds is encoded
// from each definition's JSON, encoded at its first list and reused
// while the SDK keeps the same definition; a replaced definition is
// encoded again; a page with a tool the cache does not hold is left to
// the SDK.
func TestWrapEncodesOnce(t *testing.T) {
	l := New([]string{"a", "b"})
	a := &mcp.Tool{Name: "a", Description: "<A> & a", InputSchema: map[string]any{"type": "object"}}
	b := &mcp.Tool{Name: "b", InputSchema: map[string]any{"type": "object"}}
	page := &mcp.ListToolsResult{Tools: []*mcp.Tool{a, b}, NextCursor: "next"}
	page.CacheScope = "private"

	res := l.Wrap(page)
	enc, ok := res.(*encodedList)
	if !ok {
		t.Fatalf("wrap returned %T, want *encodedList", res)
	}
	enc.SetMeta(map[string]any{"k": "v"}) // as the SDK does after the middleware
	page.SetMeta(map[string]any{"k": "v"})
	got, err := marshalNoEscape(enc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := marshalNoEscape(page)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("encoded page:\n got %s\nwant %s", got, want)
	}

	first, _ := l.encoded(a)
	again, _ := l.encoded(a)
	if &first[0] != &again[0] {
		t.Error("a definition was encoded again although the SDK keeps the same one")
	}
	replaced := &mcp.Tool{Name: "a", Description: "new", InputSchema: map[string]any{"type": "object"}}
	if b, _ := l.encoded(replaced); !bytes.Contains(b, []byte(`"new"`)) {
		t.Errorf("a replaced definition is listed as %s", b)
	}

	unknown := &mcp.ListToolsResult{Tools: []*mcp.Tool{a, {Name: "c", InputSchema: map[string]any{"type": "object"}}}}
	if res := l.Wrap(unknown); res != mcp.Result(unknown) {
		t.Errorf("a page with a tool the cache does not hold became %T", res)
	}
}
