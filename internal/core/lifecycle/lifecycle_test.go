package lifecycle

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// TestNotice: the fixed form, its sentences only when declared, a
// reason's own final period not doubled, the sunset's UTC day.
func TestNotice(t *testing.T) {
	sunset := time.Date(2027, 1, 1, 1, 0, 0, 0, time.FixedZone("X", 2*3600)) // 2026-12-31 23:00 UTC
	for _, c := range []struct {
		d         tool.Deprecation
		successor bool
		want      string
	}{
		{tool.Deprecation{Reason: "old."}, true, "DEPRECATED: old."},
		{tool.Deprecation{Reason: "old", Successor: "new"}, true, "DEPRECATED: old. Use new instead."},
		{tool.Deprecation{Reason: "old", Successor: "new"}, false, "DEPRECATED: old."},
		{tool.Deprecation{Reason: "old", Successor: "new", Sunset: sunset}, true, "DEPRECATED: old. Use new instead. Sunset: 2026-12-31."},
	} {
		if got := Notice(&c.d, c.successor); got != c.want {
			t.Errorf("Notice(%+v, %v) = %q, want %q", c.d, c.successor, got, c.want)
		}
	}
}

// TestWithoutSuccessor: the successor leaves the description and the
// _meta entry, other _meta keys and the original stay as they were,
// and a _meta entry a middleware replaced is rebuilt without it.
func TestWithoutSuccessor(t *testing.T) {
	d := &tool.Deprecation{Reason: "old", Successor: "secret_tool"}
	orig := &mcp.Tool{Name: "t", Description: "Intro.\n\n" + Describe("Body.", d, true), Meta: Meta("1", []string{"a"}, d, true)}
	orig.Meta["other"] = "kept"
	got := WithoutSuccessor(orig, d)
	if got.Description != "Intro.\n\nDEPRECATED: old.\n\nBody." {
		t.Errorf("description %q", got.Description)
	}
	meta, _ := json.Marshal(got.Meta)
	if want := `{"io.github.toolroute/lifecycle":{"deprecated":{"reason":"old"},"tags":["a"],"version":"1"},"other":"kept"}`; string(meta) != want {
		t.Errorf("_meta %s, want %s", meta, want)
	}
	if orig.Meta[MetaKey].(map[string]any)["deprecated"].(map[string]any)["successor"] != "secret_tool" {
		t.Error("the original definition changed")
	}
	orig.Meta[MetaKey] = "replaced by a middleware"
	meta, _ = json.Marshal(WithoutSuccessor(orig, d).Meta)
	if want := `{"io.github.toolroute/lifecycle":{"deprecated":{"reason":"old"}},"other":"kept"}`; string(meta) != want {
		t.Errorf("_meta %s, want %s", meta, want)
	}
}
