package registry_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/behaviour"
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

// TestLifecycleCheck: the lifecycle fields' rules, each refused with its
// own text, and a full valid declaration accepted.
func TestLifecycleCheck(t *testing.T) {
	for _, c := range []struct {
		name   string
		mutate func(*tool.Tool[*Deps])
		want   string
	}{
		{"all valid", func(t *tool.Tool[*Deps]) {
			t.Deprecated = &tool.Deprecation{Reason: "old", Successor: "other", Sunset: sunset}
			t.Version, t.Tags, t.Icons = "v1.2.3-rc.1+x", []string{"a", "b-2", "c.d", "e_f"}, []mcp.Icon{{Source: "data:image/png;base64,AA=="}}
		}, ""},
		{"no reason", func(t *tool.Tool[*Deps]) { t.Deprecated = &tool.Deprecation{Reason: " \t", Successor: "x"} },
			"Deprecated without a Reason (say why, and what to use instead)"},
		{"reason of two lines", func(t *tool.Tool[*Deps]) { t.Deprecated = &tool.Deprecation{Reason: "a\nb"} },
			"Deprecated.Reason holds a line break or control character (write one line)"},
		{"successor is itself", func(t *tool.Tool[*Deps]) { t.Deprecated = &tool.Deprecation{Reason: "r", Successor: "get_item"} },
			"Deprecated.Successor names the tool itself"},
		{"successor not a name", func(t *tool.Tool[*Deps]) { t.Deprecated = &tool.Deprecation{Reason: "r", Successor: "get item"} },
			`Deprecated.Successor "get item" is not a valid tool name: Name contains ' ': only A-Z a-z 0-9 _ . - are allowed`},
		{"version with a space", func(t *tool.Tool[*Deps]) { t.Version = "1 0" },
			`Version "1 0": at most 64 characters, no space or control character`},
		{"version too long", func(t *tool.Tool[*Deps]) { t.Version = strings.Repeat("1", 65) },
			`Version "` + strings.Repeat("1", 65) + `": at most 64 characters, no space or control character`},
		{"upper-case tag", func(t *tool.Tool[*Deps]) { t.Tags = []string{"Reads"} },
			`tag "Reads": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{"tag starting with a dash", func(t *tool.Tool[*Deps]) { t.Tags = []string{"-x"} },
			`tag "-x": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{"empty tag", func(t *tool.Tool[*Deps]) { t.Tags = []string{""} },
			`tag "": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{"tag with a comma", func(t *tool.Tool[*Deps]) { t.Tags = []string{"a,b"} },
			`tag "a,b": 1 to 64 of a-z 0-9 _ . -, starting with a letter or digit`},
		{"duplicate tag", func(t *tool.Tool[*Deps]) { t.Tags = []string{"a", "b", "a"} }, `duplicate tag "a"`},
		{"cache on a read-only tool", func(t *tool.Tool[*Deps]) { t.Cache = &tool.ResultCache{TTL: time.Second, StaleOnError: time.Minute} }, ""},
		{"cache on an additive tool", func(t *tool.Tool[*Deps]) {
			t.Behaviour, t.Cache = behaviour.Additive, &tool.ResultCache{TTL: time.Second}
		}, "Cache on a tool of behaviour additive: only ReadOnly tools' results may be cached"},
		{"cache without a TTL", func(t *tool.Tool[*Deps]) { t.Cache = &tool.ResultCache{} }, "Cache.TTL is 0s: give a positive duration"},
		{"cache with a negative stale time", func(t *tool.Tool[*Deps]) { t.Cache = &tool.ResultCache{TTL: time.Second, StaleOnError: -1} },
			"Cache.StaleOnError is -1ns: give 0 (never) or a positive duration"},
		{"icon without a source", func(t *tool.Tool[*Deps]) { t.Icons = []mcp.Icon{{Source: "x"}, {MIMEType: "image/png"}} },
			"Icons[1] has no Source"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tl := mapped()
			c.mutate(&tl)
			err, site := checkAt(registry.New[*Deps](), tl)
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			want := `registry: tool "get_item" (registered at ` + site + `): ` + c.want
			if err == nil || err.Error() != want {
				t.Errorf("Check = %v\nwant %s", err, want)
			}
		})
	}
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
