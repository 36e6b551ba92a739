package tool_test

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/jsonschema-go/jsonschema"
	invopop "github.com/invopop/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/testing/golden"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/tool"
)

// deps is the dependency container of these tests.
type deps struct{ greeting string }

// searchArgs and searchResult are representative argument and result
// types, with the invopop tags tool files use.
type searchArgs struct {
	Query  string   `json:"query" jsonschema:"minLength=1,description=What to search for"`
	Limit  int      `json:"limit,omitempty" jsonschema:"minimum=1,maximum=100,default=10,description=At most this many results"`
	Sort   string   `json:"sort,omitempty" jsonschema:"enum=relevance,enum=newest"`
	Tags   []string `json:"tags,omitempty" jsonschema:"description=Only items carrying all these tags"`
	Filter *filter  `json:"filter,omitempty" jsonschema:"description=Narrow the results"`
}

type filter struct {
	MinPrice float64 `json:"minPrice" jsonschema:"minimum=0"`
	InStock  *bool   `json:"inStock,omitempty"`
}

type searchResult struct {
	Items []item   `json:"items" jsonschema:"description=The matching items\\, best first"`
	Next  *string  `json:"next" jsonschema:"description=Cursor of the next page; null on the last"`
	Total int      `json:"total"`
	Facet *facet   `json:"facet,omitempty"`
	Warn  []string `json:"warnings,omitempty"`
}

type item struct {
	ID      string            `json:"id"`
	Name    string            `json:"name"`
	Price   float64           `json:"price"`
	Labels  map[string]string `json:"labels"`
	Updated time.Time         `json:"updated"`
}

type facet struct {
	Name   string         `json:"name"`
	Counts map[string]int `json:"counts"`
}

type createArgs struct {
	Name  string  `json:"name" jsonschema:"minLength=1,maxLength=80,description=The new item's name"`
	Price float64 `json:"price" jsonschema:"minimum=0,maximum=1000000"`
	Kind  string  `json:"kind" jsonschema:"enum=book,enum=game,enum=toy"`
	Note  *string `json:"note,omitempty" jsonschema:"description=Optional remark"`
	Embedded
}

// Embedded's fields are createArgs's own.
type Embedded struct {
	Owner string `json:"owner" jsonschema:"pattern=^[a-z]+$"`
}

type createResult struct {
	ID string `json:"id"`
}

func search(ctx context.Context, d deps, req *mcp.CallToolRequest, in searchArgs) (searchResult, error) {
	return searchResult{}, nil
}

func create(ctx context.Context, d deps, req *mcp.CallToolRequest, in createArgs) (*createResult, error) {
	return &createResult{ID: "new"}, nil
}

func TestSchemaGolden(t *testing.T) {
	tests := []struct {
		name string
		h    tool.Handler[deps]
	}{
		{"search", tool.Handle(search)},
		{"create", tool.Handle(create)},
		{"create_result", tool.HandleResult(func(ctx context.Context, d deps, req *mcp.CallToolRequest, in createArgs) (*mcp.CallToolResult, error) {
			return nil, nil
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.h.Err(); err != nil {
				t.Fatal(err)
			}
			got := map[string]*jsonschema.Schema{"input": tt.h.InputSchema(), "output": tt.h.OutputSchema()}
			if got["output"] == nil {
				delete(got, "output")
			}
			data, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden.Check(t, filepath.Join("testdata", tt.name+".schema.json"), append(data, '\n'))
		})
	}
}

// TestSchemasInline checks that every advertised schema is self-contained
// and closed: no $ref, $defs, $id or $schema anywhere, and every object
// reflected from a struct refuses properties it does not name.
func TestSchemasInline(t *testing.T) {
	handlers := map[string]tool.Handler[deps]{
		"search": tool.Handle(search),
		"create": tool.Handle(create),
	}
	for name, h := range handlers {
		for what, s := range map[string]*jsonschema.Schema{"input": h.InputSchema(), "output": h.OutputSchema()} {
			data, err := json.Marshal(s)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			if m["type"] != "object" {
				t.Errorf("%s %s schema type = %v, want object", name, what, m["type"])
			}
			objects := 0
			walkJSON(m, func(obj map[string]any) {
				for _, k := range []string{"$ref", "$defs", "definitions", "$id", "$schema", "$anchor"} {
					if _, ok := obj[k]; ok {
						t.Errorf("%s %s schema has %q: %s", name, what, k, data)
					}
				}
				if _, ok := obj["properties"]; ok {
					objects++
					if ap, ok := obj["additionalProperties"]; !ok || ap != false {
						t.Errorf("%s %s schema: object %v has additionalProperties %v, want false", name, what, obj["properties"], ap)
					}
				}
			})
			if objects == 0 {
				t.Errorf("%s %s schema has no object with properties: %s", name, what, data)
			}
		}
	}
}

func walkJSON(v any, f func(map[string]any)) {
	switch v := v.(type) {
	case map[string]any:
		f(v)
		for _, e := range v {
			walkJSON(e, f)
		}
	case []any:
		for _, e := range v {
			walkJSON(e, f)
		}
	}
}

type node struct {
	Name string  `json:"name"`
	Kids []node  `json:"kids"`
	Up   *parent `json:"up,omitempty"`
}

type parent struct {
	Child *node `json:"child"`
}

type badPattern struct {
	Code string `json:"code" jsonschema:"pattern=[a-"`
}

type badDefault struct {
	Size string `json:"size" jsonschema:"enum=s,enum=m,default=xl"`
}

type ignoredLoop struct {
	Name string       `json:"name"`
	Self *ignoredLoop `json:"-"`
	next *ignoredLoop //lint:ignore U1000 unexported fields are not reflected
}

// TestNonObject checks that every In or Out type that does not reflect to
// an object schema makes a Handler with an Err, and that structs and maps
// (and pointers to them) do not.
// point marshals itself as [x, y]: its fields do not describe its JSON.
type point struct{ X, Y int }

func (p *point) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{p.X, p.Y}) }

type withPoint struct {
	At point `json:"at"`
}

// money marshals itself as a decimal string, and says so.
type money struct{ cents int64 }

func (m money) MarshalJSON() ([]byte, error) {
	return json.Marshal(fmt.Sprintf("%d.%02d", m.cents/100, m.cents%100))
}

func (money) JSONSchema() *invopop.Schema {
	return &invopop.Schema{Type: "string", Pattern: `^[0-9]+\.[0-9]{2}$`}
}

type withMoney struct {
	Price money `json:"price"`
}

// ticket is a text marshaler over bytes, as uuid.UUID is: encoding/json
// writes it as a string, not as the array of numbers its kind suggests.
type ticket [4]byte

func (t ticket) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "T-%x", t[:]), nil }

func (t *ticket) UnmarshalText(b []byte) error {
	h, ok := bytes.CutPrefix(b, []byte("T-"))
	if !ok || len(h) != 2*len(t) {
		return errors.New("want T- and 8 hex digits")
	}
	_, err := hex.Decode(t[:], h)
	return err
}

// tree and list contain themselves without a struct in between.
type tree map[string]tree

type list []list

// pair marshals itself as [a, b] (value receiver) without describing it.
type pair struct{ A, B int }

func (p pair) MarshalJSON() ([]byte, error) { return json.Marshal([2]int{p.A, p.B}) }

// ptrText marshals as text only through a pointer: encoding/json writes
// a result's ptrText as its fields.
type ptrText struct{ A, B int }

func (p *ptrText) MarshalText() ([]byte, error) { return []byte("x"), nil }

// ptrMoney marshals itself only through a pointer, but describes itself.
type ptrMoney struct{ cents int64 }

func (m *ptrMoney) MarshalJSON() ([]byte, error) { return json.Marshal(m.cents) }

func (ptrMoney) JSONSchema() *invopop.Schema { return &invopop.Schema{Type: "integer"} }

// textKey is a map key encoding/json writes with MarshalText.
type textKey struct{ a, b int }

func (k textKey) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "%d-%d", k.a, k.b), nil }

type innerID struct {
	ID string `json:"id"`
}

type nameA struct {
	Name string
}

type nameB struct {
	Name string
}

type hidden string

func TestNonObject(t *testing.T) {
	type obj struct {
		A string `json:"a"`
	}
	tests := []struct {
		name    string
		h       tool.Handler[deps]
		wantErr string // "" = fine
	}{
		{"struct", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (obj, error) { return obj{}, nil }), ""},
		{"pointers", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, *obj) (*obj, error) { return nil, nil }), ""},
		{"empty struct", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct{}) (struct{}, error) { return struct{}{}, nil }), ""},
		{"map", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, map[string]string) (map[string]int, error) {
			return nil, nil
		}), ""},
		{"result struct", tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, obj) (*mcp.CallToolResult, error) { return nil, nil }), ""},
		{"ignored loop", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, ignoredLoop) (obj, error) { return obj{}, nil }), ""},

		{"slice in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, []string) (obj, error) { return obj{}, nil }), "input type []string reflects to an array schema, want an object"},
		{"string in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, string) (obj, error) { return obj{}, nil }), "input type string reflects to a string schema"},
		{"int in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, int) (obj, error) { return obj{}, nil }), "input type int reflects to an integer schema"},
		{"any in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, any) (obj, error) { return obj{}, nil }), "input type: interface {} is an interface"},
		{"error in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, error) (obj, error) { return obj{}, nil }), "input type: error is an interface"},
		{"slice out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) ([]obj, error) { return nil, nil }), "output type []tool_test.obj reflects to an array schema"},
		{"string out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (string, error) { return "", nil }), "output type string reflects to a string schema"},
		{"int out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (*int, error) { return nil, nil }), "output type *int reflects to an integer schema"},
		{"any out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (any, error) { return nil, nil }), "output type: interface {} is an interface"},
		{"both", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, []int) (bool, error) { return false, nil }), "input type []int reflects to an array schema, want an object (structs and maps are objects; wrap a list in a struct)\noutput type bool reflects to a boolean schema"},
		{"result slice in", tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, []string) (*mcp.CallToolResult, error) {
			return nil, nil
		}), "input type []string reflects to an array schema"},
		{"result any in", tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, any) (*mcp.CallToolResult, error) { return nil, nil }), "input type: interface {} is an interface"},
		{"invalid pattern", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, badPattern) (obj, error) { return obj{}, nil }), "input type tool_test.badPattern: invalid schema"},
		{"invalid default", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (badDefault, error) { return badDefault{}, nil }), "output type tool_test.badDefault: invalid schema"},
		{"recursive in", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, node) (obj, error) { return obj{}, nil }), "input type: tool_test.node contains itself (through tool_test.node): an inline schema cannot describe a recursive type"},
		{"recursive out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (*parent, error) { return nil, nil }), "output type: tool_test.parent contains itself"},
		{"recursive result in", tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, []node) (*mcp.CallToolResult, error) {
			return nil, nil
		}), "contains itself"},
		{"self-describing marshaler field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, withMoney) (obj, error) { return obj{}, nil }), ""},
		{"marshaler field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			P pair `json:"p"`
		}, error) {
			return struct {
				P pair `json:"p"`
			}{}, nil
		}), "output type: tool_test.pair marshals itself (MarshalJSON), so its fields do not describe its JSON: give it a JSONSchema() *jsonschema.Schema method"},
		{"marshaler in a slice", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			Pairs []*pair `json:"pairs"`
		}) (obj, error) {
			return obj{}, nil
		}), "input type: tool_test.pair marshals itself (MarshalJSON)"},
		{"marshaler root", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, pair) (obj, error) { return obj{}, nil }), "input type: tool_test.pair marshals itself"},
		{"pointer marshaler field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (withPoint, error) { return withPoint{}, nil }), "output type: tool_test.point has MarshalJSON on its pointer only (*tool_test.point), which encoding/json does not call for a value it cannot address, such as a result, so its JSON is sometimes its fields: give MarshalJSON a value receiver"},
		{"pointer text marshaler field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			V ptrText `json:"v"`
		}, error) {
			return struct {
				V ptrText `json:"v"`
			}{}, nil
		}), "output type: tool_test.ptrText has MarshalText on its pointer only (*tool_test.ptrText)"},
		{"self-describing pointer marshaler", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			P *ptrMoney `json:"p"`
		}) (obj, error) {
			return obj{}, nil
		}), ""},
		{"recursive map", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			Children tree `json:"children"`
		}) (obj, error) {
			return obj{}, nil
		}), "contains itself (through tool_test.tree): an inline schema cannot describe a recursive type"},
		{"recursive slice", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			L []list `json:"l"`
		}, error) {
			return struct {
				L []list `json:"l"`
			}{}, nil
		}), "contains itself (through tool_test.list)"},
		{"url field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			U url.URL `json:"u"`
		}) (obj, error) {
			return obj{}, nil
		}), "input type: url.URL is an object of its fields for encoding/json, which cannot read a URL string into it: use a string field"},
		{"url pointer field", tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, struct {
			U []*url.URL `json:"u"`
		}) (*mcp.CallToolResult, error) {
			return nil, nil
		}), "input type: url.URL is an object of its fields"},
		{"bool map key", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (map[bool]string, error) { return nil, nil }), "output type: map[bool]string: encoding/json cannot write a map key of type bool: use string, integer or encoding.TextMarshaler keys"},
		{"float map key", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			M map[string]map[float64]int `json:"m"`
		}) (obj, error) {
			return obj{}, nil
		}), "input type: map[float64]int: encoding/json cannot write a map key of type float64"},
		{"struct map key", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, map[obj]int) (obj, error) { return obj{}, nil }), "input type: map[tool_test.obj]int: encoding/json cannot write a map key"},
		{"text marshaler map key", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (map[textKey]int, error) { return nil, nil }), ""},
		{"shadowed field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			ID int `json:"id"`
			innerID
		}, error) {
			return struct {
				ID int `json:"id"`
				innerID
			}{}, nil
		}), `output type: struct { ID int "json:\"id\""; tool_test.innerID }: field "id": encoding/json writes ID int, the schema describes the embedded innerID.ID string (rename one)`},
		{"ambiguous fields", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			nameA
			nameB
		}) (obj, error) {
			return obj{}, nil
		}), `field "Name": the schema describes the embedded nameB.Name string, but encoding/json writes neither the embedded nameA.Name string nor the embedded nameB.Name string (the same name at the same depth)`},
		{"inline tag", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			Inner innerID `json:"inner,inline"`
		}) (obj, error) {
			return obj{}, nil
		}), `field "inner": encoding/json writes Inner tool_test.innerID, the schema does not describe it (encoding/json has no inline option); field "id": the schema describes the embedded Inner.ID string, but encoding/json does not write it`},
		{"schema-only dash", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			Secret string `json:"secret" jsonschema:"-"`
		}, error) {
			return struct {
				Secret string `json:"secret" jsonschema:"-"`
			}{}, nil
		}), `field "secret": encoding/json writes Secret string, the schema does not describe it (jsonschema:"-" hides it from the schema only; json:"-" drops it)`},
		{"dash comma tag", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			D string `json:"-,"`
		}) (obj, error) {
			return obj{}, nil
		}), `field "-": encoding/json writes D string, the schema does not describe it`},
		{"invalid tag name", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			Owner string `json:"owner's"`
		}) (obj, error) {
			return obj{}, nil
		}), `field "Owner": encoding/json writes Owner string, the schema does not describe it (encoding/json ignores the tag name "owner's", not a valid key for it); field "owner's": the schema describes Owner string, but encoding/json does not write it`},
		{"embedded unexported non-struct", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			hidden
			X int `json:"x"`
		}) (obj, error) {
			return obj{}, nil
		}), `field "hidden": the schema describes hidden tool_test.hidden, but encoding/json ignores an embedded field of an unexported type that is not a struct`},
		{"nested mismatch", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct {
			Items map[string][]*struct {
				Secret string `json:"secret" jsonschema:"-"`
			} `json:"items"`
		}, error) {
			return struct {
				Items map[string][]*struct {
					Secret string `json:"secret" jsonschema:"-"`
				} `json:"items"`
			}{}, nil
		}), `output type: struct { Secret string "json:\"secret\" jsonschema:\"-\"" }: field "secret": encoding/json writes Secret string`},
		{"shadowed field of the same type", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			ID string `json:"id"`
			innerID
			Embedded
		}) (obj, error) {
			return obj{}, nil
		}), `field "id": encoding/json writes ID string, the schema describes the embedded innerID.ID string (rename one)`},
		{"text marshaler root", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (ticket, error) { return ticket{}, nil }), "output type tool_test.ticket reflects to a string schema, want an object"},
		{"chan left out", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct {
			A string
			C chan int `json:"-"`
		}) (obj, error) {
			return obj{}, nil
		}), ""},
		{"chan field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct{ C chan int }) (obj, error) {
			return obj{}, nil
		}), "holds a chan int, which encoding/json cannot encode"},
		{"func field", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, obj) (struct{ F func() }, error) {
			return struct{ F func() }{}, nil
		}), "holds a func(), which encoding/json cannot encode"},
		{"complex in a map", tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, map[string]complex128) (obj, error) {
			return obj{}, nil
		}), "holds a complex128"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.h == (tool.Handler[deps]{}) {
				t.Fatal("Handle returned the zero Handler")
			}
			err := tt.h.Err()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("Err() = %v, want nil", err)
				}
				if s := tt.h.InputSchema(); s == nil || s.Type != "object" {
					t.Errorf("InputSchema() = %v, want an object schema", s)
				}
				return
			}
			if err == nil {
				t.Fatalf("Err() = nil, want %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Err() = %q, want it to contain %q", err, tt.wantErr)
			}
			// AddTo refuses such a handler.
			defer func() {
				if p := recover(); p == nil || !strings.HasPrefix(fmt.Sprint(p), `tool: add "x": `) {
					t.Errorf("AddTo panic = %v, want a tool: AddTo panic", p)
				}
			}()
			tt.h.AddTo(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), &mcp.Tool{Name: "x"}, deps{})
		})
	}
}

func TestZeroHandler(t *testing.T) {
	var zero tool.Handler[deps]
	nilFn := tool.Handle[deps, struct{}, struct{}](nil)
	nilResult := tool.HandleResult[deps, struct{}](nil)
	for name, h := range map[string]tool.Handler[deps]{"zero": zero, "Handle(nil)": nilFn, "HandleResult(nil)": nilResult} {
		if h != (tool.Handler[deps]{}) {
			t.Errorf("%s is not the zero Handler", name)
		}
		if err := h.Err(); err == nil || err.Error() != "missing handler" {
			t.Errorf("%s: Err() = %v, want missing handler", name, err)
		}
		if h.InputSchema() != nil || h.OutputSchema() != nil {
			t.Errorf("%s: has schemas", name)
		}
		func() {
			defer func() {
				if p := recover(); fmt.Sprint(p) != `tool: add "x": missing handler` {
					t.Errorf("%s: AddTo panic = %v", name, p)
				}
			}()
			h.AddTo(mcp.NewServer(&mcp.Implementation{Name: "s"}, nil), &mcp.Tool{Name: "x"}, deps{})
		}()
	}
	if h := tool.Handle(search); h == (tool.Handler[deps]{}) || h.Err() != nil {
		t.Errorf("Handle(search) is the zero Handler or refused: %v", h.Err())
	}
}

// connect serves s to a new in-memory client session.
func connect(t testing.TB, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	return mcptest.Connect(t, s, nil)
}

// TestAddTo serves handlers made by Handle and HandleResult to a real
// client.
func TestAddTo(t *testing.T) {
	type greetArgs struct {
		Name string `json:"name" jsonschema:"minLength=1"`
	}
	type greeting struct {
		Text string `json:"text"`
	}
	var wrapped []string
	wrap := func(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) error) error {
		wrapped = append(wrapped, req.Params.Name)
		return run(context.WithValue(ctx, greetArgs{}, "from wrap"))
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	tool.Handle(func(ctx context.Context, d deps, req *mcp.CallToolRequest, in greetArgs) (greeting, error) {
		return greeting{Text: fmt.Sprintf("%s, %s (%v)", d.greeting, in.Name, ctx.Value(greetArgs{}))}, nil
	}).AddWrapped(s, &mcp.Tool{Name: "greet", Description: "d"}, deps{greeting: "Hello"}, wrap)
	tool.HandleResult(func(ctx context.Context, d deps, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{
			&mcp.TextContent{Text: d.greeting},
			&mcp.TextContent{Text: in.Name},
		}}, nil
	}).AddTo(s, &mcp.Tool{Name: "parts"}, deps{greeting: "Hi"})
	tool.HandleResult(func(ctx context.Context, d deps, req *mcp.CallToolRequest, in greetArgs) (*mcp.CallToolResult, error) {
		return nil, errors.New("no such item")
	}).AddTo(s, &mcp.Tool{Name: "fails"}, deps{})
	tool.Handle(search).AddTo(s, &mcp.Tool{Name: "search"}, deps{})
	tool.Handle(func(ctx context.Context, d deps, req *mcp.CallToolRequest, in struct{}) (*searchResult, error) {
		return nil, nil
	}).AddTo(s, &mcp.Tool{Name: "nil_result"}, deps{})
	cs := connect(t, s)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("greet: isError: %v", res.Content)
	}
	want := map[string]any{"text": "Hello, Ada (from wrap)"}
	if diff := cmp.Diff(want, res.StructuredContent); diff != "" {
		t.Errorf("greet structured content mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"greet"}, wrapped); diff != "" {
		t.Errorf("wrap calls mismatch (-want +got):\n%s", diff)
	}

	// Bad arguments never reach the handler.
	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "greet", Arguments: map[string]any{"name": ""}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError {
		t.Errorf("greet with an empty name: not an error: %v", res.StructuredContent)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "parts", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Hi", "Ada"}, texts(res)); diff != "" || res.IsError || res.StructuredContent != nil {
		t.Errorf("parts: isError %v, structured %v, content mismatch (-want +got):\n%s", res.IsError, res.StructuredContent, diff)
	}

	res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "fails", Arguments: map[string]any{"name": "Ada"}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !slicesEqual(texts(res), []string{"no such item"}) {
		t.Errorf("fails: isError %v, content %q; want an isError result with the error's text", res.IsError, texts(res))
	}

	// Zero results, whose nil slices, maps and pointers marshal to null,
	// pass the SDK's validation of the output against its schema.
	for _, name := range []string{"search", "nil_result"} {
		args := map[string]any{"query": "x"}
		if name == "nil_result" {
			args = map[string]any{}
		}
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if res.IsError {
			t.Fatalf("%s: isError: %q", name, texts(res))
		}
		want := map[string]any{"items": nil, "next": nil, "total": 0.0}
		if diff := cmp.Diff(want, res.StructuredContent); diff != "" {
			t.Errorf("%s structured content mismatch (-want +got):\n%s", name, diff)
		}
	}

	// The listed tools carry the handlers' schemas.
	lt, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tl := range lt.Tools {
		if tl.InputSchema == nil {
			t.Errorf("%s: no input schema", tl.Name)
		}
		if (tl.OutputSchema == nil) != (tl.Name == "parts" || tl.Name == "fails") {
			t.Errorf("%s: output schema %v", tl.Name, tl.OutputSchema)
		}
	}
}

// TestNullableOutput checks the nulls output schemas accept: where
// encoding/json writes one, and nowhere else.
func TestNullableOutput(t *testing.T) {
	h := tool.Handle(search)
	r, err := h.OutputSchema().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		doc  string
		want bool
	}{
		{`{"items":null,"next":null,"total":0}`, true},
		{`{"items":[],"next":"c","total":1,"warnings":["w"]}`, true},
		{`{"items":[{"id":"1","name":"n","price":1,"labels":null,"updated":"2026-01-02T03:04:05Z"}],"next":null,"total":1}`, true},
		{`{"items":null,"next":null,"total":0,"facet":{"name":"f","counts":null}}`, true},
		{`{"items":null,"next":null,"total":null}`, false},
		{`{"items":[null],"next":null,"total":0}`, false},
		{`{"items":null,"next":null,"total":0,"facet":{"name":null,"counts":{}}}`, false},
		{`{"items":null,"next":null,"total":0,"warnings":[null]}`, false},
		{`{"items":null,"next":null,"total":0,"extra":1}`, false},
		{`{"items":null,"total":0}`, false},
	}
	for _, tt := range tests {
		var v any
		if err := json.Unmarshal([]byte(tt.doc), &v); err != nil {
			t.Fatal(err)
		}
		if err := r.Validate(v); (err == nil) != tt.want {
			t.Errorf("Validate(%s) = %v, want valid: %v", tt.doc, err, tt.want)
		}
	}
	// Input schemas stay strict: a model must send the array.
	in, err := h.InputSchema().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := in.Validate(map[string]any{"query": "q", "tags": nil}); err == nil {
		t.Error("input schema accepts a null list")
	}
}

func texts(res *mcp.CallToolResult) []string {
	var out []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			out = append(out, tc.Text)
		}
	}
	return out
}

func slicesEqual(a, b []string) bool { return cmp.Equal(a, b) }

func TestCallFromContext(t *testing.T) {
	ctx := context.Background()
	if c := tool.CallFromContext(ctx); c != nil {
		t.Errorf("CallFromContext(Background) = %+v, want nil", c)
	}
	call := &tool.Call{Tool: "get_item", ServiceKey: "catalog", Routes: []tool.Route{{URI: "/catalog/items/{id}", Method: "GET"}}}
	got := tool.CallFromContext(tool.WithCall(ctx, call))
	if got != call {
		t.Errorf("CallFromContext(WithCall(c)) = %+v, want %+v", got, call)
	}
	inner := &tool.Call{Tool: "other", Local: true}
	if got := tool.CallFromContext(tool.WithCall(tool.WithCall(ctx, call), inner)); got != inner {
		t.Errorf("nested WithCall gave %+v, want the inner call", got)
	}
}

func TestGoldenFilesAreJSON(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(files) == 0 && !golden.Updating() {
		t.Fatal("no golden files")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(data) || !bytes.HasSuffix(data, []byte("}\n")) {
			t.Errorf("%s is not one JSON object", f)
		}
	}
}

// stamp marshals itself, and so must describe its own schema: invopop
// would reflect its (unexported) fields as an empty object.
type stamp struct{ t time.Time }

func (s stamp) MarshalJSON() ([]byte, error) { return json.Marshal(s.t) }

func (stamp) JSONSchema() *invopop.Schema {
	return &invopop.Schema{Type: "string", Format: "date-time"}
}

type Base struct {
	Owner *string `json:"owner"`
}

type kinds struct {
	*Base
	When   *time.Time        `json:"when"`
	Stamp  stamp             `json:"stamp"`
	Raw    []byte            `json:"raw"`
	Mode   *string           `json:"mode" jsonschema:"enum=a,enum=b"`
	Ptrs   []*filter         `json:"ptrs"`
	ByName map[string][]int  `json:"byName"`
	Fixed  [2]*int           `json:"fixed"`
	Skip   *int              `json:"-"`
	Opt    *int              `json:"opt,omitzero"`
	Any    any               `json:"any"`
	Nested map[string]*facet `json:"nested,omitempty"`
}

// TestNullableOutputKinds checks allowNulls on every kind of field.
func TestNullableOutputKinds(t *testing.T) {
	h := tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct{}) (kinds, error) { return kinds{}, nil })
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	r, err := h.OutputSchema().Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	// The zero value marshals, and validates.
	data, err := json.Marshal(kinds{})
	if err != nil {
		t.Fatal(err)
	}
	var zero map[string]any
	if err := json.Unmarshal(data, &zero); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(zero); err != nil {
		t.Errorf("zero value %s does not validate: %v", data, err)
	}
	full := func(edit func(map[string]any)) map[string]any {
		m := map[string]any{
			"owner": "o", "when": "2026-01-02T03:04:05Z", "stamp": "2026-01-02T03:04:05Z", "raw": "AAE=",
			"mode": "a", "ptrs": []any{nil, map[string]any{"minPrice": 1.0}}, "byName": map[string]any{"x": nil, "y": []any{1.0}},
			"fixed": []any{nil, 1.0}, "any": nil,
			"nested": map[string]any{"f": nil, "g": map[string]any{"name": "n", "counts": nil}},
		}
		edit(m)
		return m
	}
	tests := []struct {
		name string
		doc  map[string]any
		want bool
	}{
		{"full", full(func(map[string]any) {}), true},
		{"mode c", full(func(m map[string]any) { m["mode"] = "c" }), false},
		{"mode null", full(func(m map[string]any) { m["mode"] = nil }), true},
		{"stamp null", full(func(m map[string]any) { m["stamp"] = nil }), false},
		{"owner null", full(func(m map[string]any) { m["owner"] = nil }), true},
		{"owner absent", full(func(m map[string]any) { delete(m, "owner") }), true},
		{"owner number", full(func(m map[string]any) { m["owner"] = 1 }), false},
		{"when absent", full(func(m map[string]any) { delete(m, "when") }), false},
		{"opt null", full(func(m map[string]any) { m["opt"] = nil }), false},
		{"opt 1", full(func(m map[string]any) { m["opt"] = 1 }), true},
		{"nested value string", full(func(m map[string]any) { m["nested"] = map[string]any{"f": "x"} }), false},
		{"byName value of strings", full(func(m map[string]any) { m["byName"] = map[string]any{"x": []any{"s"}} }), false},
	}
	for _, tt := range tests {
		if err := r.Validate(tt.doc); (err == nil) != tt.want {
			t.Errorf("%s: Validate = %v, want valid: %v", tt.name, err, tt.want)
		}
	}
}

// TestPropertyOrderOnTheWire: a client receives a tool's properties in
// the struct's order (name, price, kind, note, owner), not the alphabet's.
func TestPropertyOrderOnTheWire(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	tool.Handle(create).AddTo(s, &mcp.Tool{Name: "create"}, deps{})
	var wire syncbuf.Buffer
	cs := mcptest.Connect(t, s, &mcptest.Options{Transport: func(ct mcp.Transport) mcp.Transport {
		return &mcp.LoggingTransport{Transport: ct, Writer: &wire}
	}})
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	raw := wire.String()
	i := strings.Index(raw, `"inputSchema":`)
	if i < 0 {
		t.Fatalf("no inputSchema on the wire:\n%s", raw)
	}
	var at []int
	for _, p := range []string{`"name":{`, `"price":{`, `"kind":{`, `"note":{`, `"owner":{`} {
		at = append(at, strings.Index(raw[i:], p))
	}
	if !slices.IsSorted(at) || at[0] < 0 {
		t.Errorf("properties at %v, want the struct's order:\n%s", at, raw[i:])
	}
}

// TestTextMarshalerOnTheWire: a field whose type marshals as text is a
// string in both schemas, so the SDK accepts the string a client sends
// and the string the handler's result holds (reflected by its kind, a
// [4]byte would be an array of four integers, and both would fail).
func TestTextMarshalerOnTheWire(t *testing.T) {
	type args struct {
		Ticket ticket          `json:"ticket"`
		When   time.Time       `json:"when"`
		Raw    json.RawMessage `json:"raw,omitempty"`
	}
	type out struct {
		Next  ticket            `json:"next"`
		Seen  map[string]ticket `json:"seen"`
		Price money             `json:"price"`
	}
	h := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in args) (out, error) {
		next := in.Ticket
		next[3]++
		return out{Next: next, Seen: map[string]ticket{"in": in.Ticket}, Price: money{1999}}, nil
	})
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	if got := h.InputSchema().Properties["ticket"].Type; got != "string" {
		t.Errorf("ticket's input schema type = %q, want string", got)
	}
	if got := h.InputSchema().Properties["when"]; got.Type != "string" || got.Format != "date-time" {
		t.Errorf("time.Time's schema = %+v, want a date-time string", got)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	h.AddTo(s, &mcp.Tool{Name: "next"}, deps{})
	cs := connect(t, s)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "next", Arguments: map[string]any{
		"ticket": "T-0a0b0c0d", "when": "2026-11-30T01:02:03Z", "raw": []any{1, "two"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError: %v", res.Content[0].(*mcp.TextContent).Text)
	}
	got, _ := json.Marshal(res.StructuredContent)
	if want := `{"next":"T-0a0b0c0e","price":"19.99","seen":{"in":"T-0a0b0c0d"}}`; string(got) != want {
		t.Errorf("result = %s, want %s", got, want)
	}
}

// TestJSONNumberOnTheWire: encoding/json reads and writes a json.Number
// as a JSON number, and so its schema says.
func TestJSONNumberOnTheWire(t *testing.T) {
	type args struct {
		N json.Number `json:"n"`
	}
	type out struct {
		N    json.Number `json:"n"`
		Text string      `json:"text"`
	}
	h := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in args) (out, error) {
		return out{N: in.N, Text: in.N.String()}, nil
	})
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	h.AddTo(s, &mcp.Tool{Name: "echo"}, deps{})
	cs := connect(t, s)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"n": 2.5}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError: %v", texts(res))
	}
	if want := `{"n":2.5,"text":"2.5"}`; texts(res)[0] != want {
		t.Errorf("result = %s, want %s", texts(res)[0], want)
	}
}

// level is an integer map key that encoding/json writes with MarshalText.
type level int

func (l level) MarshalText() ([]byte, error) { return fmt.Appendf(nil, "L%d", int(l)), nil }

// TestMapKeysOnTheWire: the keys a map's schema accepts are those
// encoding/json writes and reads: negative integers too, only digits for
// unsigned ones, MarshalText's for a TextMarshaler; and a nil value of an
// integer-keyed map is a null the output schema accepts.
func TestMapKeysOnTheWire(t *testing.T) {
	type args struct {
		M map[int8]string   `json:"m"`
		U map[uint16]string `json:"u,omitempty"`
	}
	type out struct {
		M map[int][]string `json:"m"`
		L map[level]int    `json:"l"`
		T map[textKey]int  `json:"t"`
	}
	h := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in args) (out, error) {
		o := out{M: map[int][]string{}, L: map[level]int{-2: 1}, T: map[textKey]int{{1, 2}: 3}}
		for k, v := range in.M {
			o.M[int(k)] = nil
			o.M[-int(k)] = []string{v}
		}
		return o, nil
	})
	if err := h.Err(); err != nil {
		t.Fatal(err)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	h.AddTo(s, &mcp.Tool{Name: "keys"}, deps{})
	cs := connect(t, s)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keys", Arguments: map[string]any{
		"m": map[string]any{"-1": "minus one"}, "u": map[string]any{"7": "seven"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("isError: %v", texts(res))
	}
	if want := `{"l":{"L-2":1},"m":{"-1":null,"1":["minus one"]},"t":{"1-2":3}}`; texts(res)[0] != want {
		t.Errorf("result = %s, want %s", texts(res)[0], want)
	}
	// An unsigned key is digits only: the SDK refuses the others before
	// encoding/json would.
	for _, u := range []string{"-7", "x"} {
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "keys", Arguments: map[string]any{
			"m": map[string]any{}, "u": map[string]any{u: "bad"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if !res.IsError || !strings.Contains(texts(res)[0], "validating") {
			t.Errorf("key %q of a map[uint16]string: isError %v %q, want a validation error", u, res.IsError, texts(res))
		}
	}
}

// secretError has a text for the server's log and another for the client.
type secretError struct{ detail string }

func (e *secretError) Error() string      { return "lookup failed: " + e.detail }
func (e *secretError) ClientText() string { return "lookup failed" }

// TestClientText: an error with a ClientText method, anywhere in the
// handler's error chain, shows the client that text and nothing else of
// the chain (no package needs to be linked for it); an error without one
// shows its own text, and one that would show an upstream URL a fixed
// text.
func TestClientText(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	for name, err := range map[string]error{
		"texter":   fmt.Errorf("catalog: %w", &url.Error{Op: "Get", URL: "http://internal:8080/x", Err: &secretError{"db at 10.0.0.7 down"}}),
		"plain":    errors.New("no such item"),
		"upstream": &url.Error{Op: "Get", URL: "http://internal:8080/x", Err: errors.New("connection refused")},
	} {
		tool.Handle(func(context.Context, deps, *mcp.CallToolRequest, struct{}) (searchResult, error) {
			return searchResult{}, err
		}).AddTo(s, &mcp.Tool{Name: name}, deps{})
	}
	cs := connect(t, s)
	for name, want := range map[string]string{"texter": "lookup failed", "plain": "no such item", "upstream": "upstream request failed"} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !res.IsError || !slicesEqual(texts(res), []string{want}) {
			t.Errorf("%s: isError %v, content %q; want the error %q", name, res.IsError, texts(res), want)
		}
	}
}

// brittle marshals as text and panics on the input "boom" (decoding) or
// when its value is "boom" (encoding).
type brittle string

func (b brittle) MarshalText() ([]byte, error) {
	if b == "boom" {
		panic("brittle: cannot encode boom")
	}
	return []byte(b), nil
}

func (b *brittle) UnmarshalText(t []byte) error {
	if string(t) == "boom" {
		panic("brittle: cannot decode boom")
	}
	*b = brittle(t)
	return nil
}

// TestPanicBoundary: the handler's own boundary covers all its work, on
// a bare *mcp.Server with no middleware at all: a panic in fn, in the
// decoding of the arguments (UnmarshalText) or in the encoding of the
// result (MarshalText) answers with the generic isError result, and the
// session goes on.
func TestPanicBoundary(t *testing.T) {
	type echo struct {
		V brittle `json:"v"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "s"}, nil)
	tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in echo) (echo, error) {
		switch in.V {
		case "in":
			return echo{V: "boom"}, nil
		case "fn":
			panic("fn")
		}
		return in, nil
	}).AddTo(s, &mcp.Tool{Name: "echo"}, deps{})
	tool.HandleResult(func(context.Context, deps, *mcp.CallToolRequest, echo) (*mcp.CallToolResult, error) {
		panic("whole")
	}).AddTo(s, &mcp.Tool{Name: "whole"}, deps{})
	cs := connect(t, s)
	const generic = "internal error: the tool failed unexpectedly; the failure was logged"
	for _, c := range []struct{ tool, v string }{{"echo", "boom"}, {"echo", "in"}, {"echo", "fn"}, {"whole", "x"}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool, Arguments: map[string]any{"v": c.v}})
		if err != nil {
			t.Fatalf("%s %q: protocol error %v, want an isError result", c.tool, c.v, err)
		}
		if !res.IsError || !slicesEqual(texts(res), []string{generic}) {
			t.Errorf("%s %q: isError %v, content %q; want %q", c.tool, c.v, res.IsError, texts(res), generic)
		}
		res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"v": "ok"}})
		if err != nil || res.IsError {
			t.Fatalf("after %s %q: %v %v", c.tool, c.v, err, texts(res))
		}
	}
}
