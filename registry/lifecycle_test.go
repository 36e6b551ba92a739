package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

var sunset = time.Date(2027, 6, 30, 18, 0, 0, 0, time.FixedZone("EST", -5*3600)) // 2027-06-30 23:00 UTC

// lifecycleRegistry holds a deprecated tool with every lifecycle field,
// its successor, and a tool that declares none.
func lifecycleRegistry(t *testing.T) *registry.Registry[*Deps] {
	t.Helper()
	r := registry.New[*Deps]()
	old := mapped()
	old.Deprecated = &tool.Deprecation{Reason: " returns no prices. ", Successor: "get_item_v2", Sunset: sunset}
	old.Version = "1.4.0"
	old.Tags = []string{"catalog", "reads"}
	old.Icons = []mcp.Icon{{Source: "https://example.com/item.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}}}
	r.Register(old)
	v2 := mapped()
	v2.Name, v2.Version, v2.Tags = "get_item_v2", "2", []string{"reads", "catalog"}
	r.Register(v2)
	r.Register(local())
	return r
}

// TestLifecycleDefinition: the definition a client lists is derived
// from the declaration in one fixed form: the notice heads the
// description, _meta holds version, sorted tags and the deprecation
// (its sunset a UTC date), the icons are the declared ones; a tool that
// declares none has no _meta. The registry's own views keep the plain
// description and hand out copies.
func TestLifecycleDefinition(t *testing.T) {
	r := lifecycleRegistry(t)
	cs := serve(t, r, &Deps{})
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		byName[tl.Name] = tl
	}
	old := byName["get_item"]
	if want := "DEPRECATED: returns no prices. Use get_item_v2 instead. Sunset: 2027-06-30.\n\nFetch one catalog item by its id."; old.Description != want {
		t.Errorf("description = %q\nwant %q", old.Description, want)
	}
	meta, _ := json.Marshal(old.Meta)
	if want := `{"io.github.toolroute/lifecycle":{"deprecated":{"reason":"returns no prices.","successor":"get_item_v2","sunset":"2027-06-30"},"tags":["catalog","reads"],"version":"1.4.0"}}`; string(meta) != want {
		t.Errorf("_meta = %s\nwant %s", meta, want)
	}
	if diff := cmp.Diff([]mcp.Icon{{Source: "https://example.com/item.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}}}, old.Icons); diff != "" {
		t.Errorf("icons (-want +got):\n%s", diff)
	}
	if v2 := byName["get_item_v2"]; v2.Description != "Fetch one catalog item by its id." {
		t.Errorf("successor's description = %q", v2.Description)
	}
	if plain := byName["server_info"]; plain.Meta != nil || plain.Icons != nil {
		t.Errorf("a tool without lifecycle has _meta %v, icons %v", plain.Meta, plain.Icons)
	}

	got, _ := r.Lookup("get_item")
	if got.Description != "Fetch one catalog item by its id." || got.Deprecated.Reason != "returns no prices." || !got.Deprecated.Sunset.Equal(time.Date(2027, 6, 30, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("Lookup = %q, %+v", got.Description, got.Deprecated)
	}
	got.Deprecated.Reason, got.Tags[0], got.Icons[0].Sizes[0] = "changed", "changed", "changed"
	again, _ := r.Lookup("get_item")
	if again.Deprecated.Reason != "returns no prices." || again.Tags[0] != "catalog" || again.Icons[0].Sizes[0] != "any" {
		t.Errorf("changing Lookup's copy changed the registry: %+v %v %v", again.Deprecated, again.Tags, again.Icons)
	}
	var call *tool.Call
	for _, c := range r.Calls() {
		if c.Tool == "get_item" {
			call = c
		}
	}
	if call == nil || call.Deprecated == nil || call.Deprecated.Successor != "get_item_v2" || !cmp.Equal(call.Tags, []string{"catalog", "reads"}) {
		t.Errorf("Calls' get_item = %+v", call)
	}
}

// TestInstallUnknownSuccessor: Install refuses a successor the registry
// does not have, naming the tool, its site and the successor.
func TestInstallUnknownSuccessor(t *testing.T) {
	r := registry.New[*Deps]()
	tl := mapped()
	tl.Deprecated = &tool.Deprecation{Reason: "r", Successor: "get_item_v3"}
	_, site := registerAt(r, tl)
	defer func() {
		want := `registry: tool "get_item" (registered at ` + site + `): Deprecated.Successor "get_item_v3" is no tool of the registry`
		if p := recover(); p != want {
			t.Errorf("Install panicked with %v\nwant %s", p, want)
		}
	}()
	r.Install(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), &Deps{})
}

// TestLifecycleTable: the route table carries each tool's version,
// sorted tags and deprecation, and leaves them out where none is
// declared.
func TestLifecycleTable(t *testing.T) {
	data, err := jsonIndent(lifecycleRegistry(t).Table())
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "table_lifecycle.golden.json"), data)
}
