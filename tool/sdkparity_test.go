package tool_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/tool"
)

// The types of the parity tools: defaults, bounds, enums, optional
// pointers, slices, maps and a nested object.
type parityIn struct {
	Name  string         `json:"name" jsonschema:"minLength=1"`
	Count int            `json:"count,omitempty" jsonschema:"minimum=0,maximum=100,default=7"`
	Ratio *float64       `json:"ratio,omitempty"`
	Tags  []string       `json:"tags,omitempty"`
	Inner *parityInner   `json:"inner,omitempty"`
	Attrs map[string]int `json:"attrs,omitempty"`
	Mode  string         `json:"mode,omitempty" jsonschema:"enum=a,enum=b"`
}

type parityInner struct {
	On   bool   `json:"on"`
	Note string `json:"note,omitempty"`
}

type parityOut struct {
	Echo  parityIn `json:"echo"`
	Total int      `json:"total" jsonschema:"maximum=500"`
	List  []int    `json:"list"`
}

// parityPlain has no defaults: null arguments are compared as they are.
type parityPlain struct {
	Name string   `json:"name,omitempty"`
	Tags []string `json:"tags,omitempty"`
}

func plainBody(in parityPlain) (parityPlain, error) {
	if in.Name == "fail" {
		return parityPlain{}, errors.New("no such item")
	}
	return in, nil
}

// sdkPanicked marks the error of an SDK handler that panicked.
const sdkPanicked = "the SDK panicked"

// parityBody is every parity tool's work, toolroute's and the SDK's: its
// errors and results are chosen by the arguments.
func parityBody(in parityIn) (*parityOut, error) {
	switch in.Name {
	case "fail":
		return nil, errors.New("no such item: " + in.Name)
	case "rpc":
		return nil, &jsonrpc.Error{Code: 4711, Message: "refused by the tool"}
	case "nil":
		return nil, nil
	}
	// Count × 10 breaks the output's maximum for counts above 50.
	return &parityOut{Echo: in, Total: in.Count * 10}, nil
}

func parityMap(in parityIn) (map[string]int, error) {
	if in.Name != "nil" {
		return map[string]int{"count": in.Count}, nil
	}
	return nil, nil
}

// parityTools are the tools both servers of the parity tests serve.
var parityTools = []string{"typed", "whole", "mapped", "plain"}

// paritySessions returns clients of two servers of the same tools: one
// added by toolroute (the low-level Server.AddTool with the schema's
// JSON, its own validation), one by the SDK's typed mcp.AddTool (with
// the same schemas).
func paritySessions(tb testing.TB) (ours, sdk *mcp.ClientSession) {
	h := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in parityIn) (*parityOut, error) {
		return parityBody(in)
	})
	whole := tool.HandleResult(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in parityIn) (*mcp.CallToolResult, error) {
		if in.Name == "fail" || in.Name == "rpc" {
			_, err := parityBody(in)
			return nil, err
		}
		if in.Name == "nil" {
			return nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "count " + fmt.Sprint(in.Count)}}}, nil
	})
	// A nil map result is written as null: both validate it as {}.
	mapped := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in parityIn) (map[string]int, error) {
		return parityMap(in)
	})
	plain := tool.Handle(func(_ context.Context, _ deps, _ *mcp.CallToolRequest, in parityPlain) (parityPlain, error) {
		return plainBody(in)
	})
	if h.Err() != nil || whole.Err() != nil || mapped.Err() != nil || plain.Err() != nil {
		tb.Fatal(h.Err(), whole.Err(), mapped.Err(), plain.Err())
	}

	oursServer := mcp.NewServer(&mcp.Implementation{Name: "toolroute"}, nil)
	h.AddWrapped(oursServer, &mcp.Tool{Name: "typed"}, deps{}, nil)
	whole.AddWrapped(oursServer, &mcp.Tool{Name: "whole"}, deps{}, nil)
	mapped.AddWrapped(oursServer, &mcp.Tool{Name: "mapped"}, deps{}, nil)
	plain.AddWrapped(oursServer, &mcp.Tool{Name: "plain"}, deps{}, nil)

	sdkServer := mcp.NewServer(&mcp.Implementation{Name: "sdk"}, nil)
	// The SDK's handlers do not recover panics (see sdkPanicked).
	sdkServer.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (res mcp.Result, err error) {
			defer func() {
				if p := recover(); p != nil {
					res, err = nil, fmt.Errorf("%s: %v", sdkPanicked, p)
				}
			}()
			return next(ctx, method, req)
		}
	})
	mcp.AddTool(sdkServer, &mcp.Tool{Name: "typed", InputSchema: h.InputSchema(), OutputSchema: h.OutputSchema()},
		func(_ context.Context, _ *mcp.CallToolRequest, in parityIn) (*mcp.CallToolResult, *parityOut, error) {
			out, err := parityBody(in)
			return nil, out, err
		})
	mcp.AddTool(sdkServer, &mcp.Tool{Name: "plain", InputSchema: plain.InputSchema(), OutputSchema: plain.OutputSchema()},
		func(_ context.Context, _ *mcp.CallToolRequest, in parityPlain) (*mcp.CallToolResult, parityPlain, error) {
			out, err := plainBody(in)
			return nil, out, err
		})
	mcp.AddTool(sdkServer, &mcp.Tool{Name: "mapped", InputSchema: mapped.InputSchema(), OutputSchema: mapped.OutputSchema()},
		func(_ context.Context, _ *mcp.CallToolRequest, in parityIn) (*mcp.CallToolResult, map[string]int, error) {
			out, err := parityMap(in)
			return nil, out, err
		})
	mcp.AddTool(sdkServer, &mcp.Tool{Name: "whole", InputSchema: whole.InputSchema()},
		func(_ context.Context, _ *mcp.CallToolRequest, in parityIn) (*mcp.CallToolResult, any, error) {
			if in.Name == "fail" || in.Name == "rpc" {
				_, err := parityBody(in)
				return nil, nil, err
			}
			if in.Name == "nil" {
				return nil, nil, nil
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "count " + fmt.Sprint(in.Count)}}}, nil, nil
		})

	return connect(tb, oursServer), connect(tb, sdkServer)
}

// parityArgs are the argument texts TestSDKParity calls every tool with
// (and FuzzSDKParity starts from): wrong types, nulls, bounds, enums,
// unknown and differently-cased keys, duplicate keys, big and
// out-of-range numbers, deep nesting, and the names whose handlers fail
// or return nothing.
var parityArgs = func() []string {
	deep := strings.Repeat("[", 999) + strings.Repeat("]", 999)
	return []string{
		``, `null`, `{}`, `[]`, `"x"`, `7`,
		`{"name":"a"}`, `{"name":""}`, `{"name":1}`, `{"name":null}`, `{"Name":"a"}`, `{"name":"a","NAME":"b"}`,
		`{"name":"a","name":"b"}`, `{"name":"é\u0000"}`, `{"name":"a","extra":1}`,
		`{"name":"a","count":3}`, `{"name":"a","count":3.0}`, `{"name":"a","count":3.5}`, `{"name":"a","count":1e1}`,
		`{"name":"a","count":-1}`, `{"name":"a","count":101}`, `{"name":"a","count":60}`, `{"name":"a","count":null}`,
		`{"name":"a","count":"3"}`, `{"name":"a","count":9007199254740993}`, `{"name":"a","count":1e400}`,
		`{"name":"a","ratio":0.1}`, `{"name":"a","ratio":null}`, `{"name":"a","ratio":true}`,
		`{"name":"a","tags":["x"]}`, `{"name":"a","tags":["x",1]}`, `{"name":"a","tags":null}`, `{"name":"a","tags":"x"}`,
		`{"name":"a","inner":{}}`, `{"name":"a","inner":{"on":true}}`, `{"name":"a","inner":{"on":"yes"}}`,
		`{"name":"a","inner":{"on":true,"more":1}}`, `{"name":"a","inner":null}`,
		`{"name":"a","attrs":{"k":1}}`, `{"name":"a","attrs":{"k":1.5}}`, `{"name":"a","attrs":{"":1}}`, `{"name":"a","attrs":[]}`,
		`{"name":"a","mode":"a"}`, `{"name":"a","mode":"c"}`, `{"name":"a","mode":""}`,
		`{"name":"a","attrs":{"k":` + deep + `}}`,
		`{"name":"fail"}`, `{"name":"rpc"}`, `{"name":"nil"}`,
	}
}()

// TestSDKParity calls the same tool added by toolroute and by the SDK's
// typed mcp.AddTool (see paritySessions) with every argument text of
// parityArgs, and wants the same answer from both: the same protocol
// error or result (isError, texts, structured content). It is the proof
// that toolroute validates arguments and results as strictly as the SDK
// and with its texts, and it fails when the SDK changes either.
func TestSDKParity(t *testing.T) {
	oursCS, sdkCS := paritySessions(t)
	args := parityArgs
	ctx := context.Background()
	sdkPanics := false
	defer func() {
		if !sdkPanics {
			// A canary, as internal/sdkfix/stdioguard's: the day go-sdk fixes
			// it, this fails, to say so.
			t.Error("go-sdk no longer panics on null arguments to a tool whose schema has a default " +
				"(the crash go-sdk #1062 fixed for Elicit): internal/core/schema.Object.Input's nil-map guard " +
				"is no longer a workaround (null still reads as {}), and this check can go")
		}
	}()
	for _, name := range parityTools {
		for _, a := range args {
			params := &mcp.CallToolParams{Name: name}
			if a != "" {
				params.Arguments = json.RawMessage(a)
			}
			label := a
			if len(label) > 80 {
				label = label[:80] + "…"
			}
			got, gotErr := oursCS.CallTool(ctx, params)
			want, wantErr := sdkCS.CallTool(ctx, params)
			if wantErr != nil && strings.Contains(wantErr.Error(), sdkPanicked) {
				// go-sdk v1.8.0 panics on null arguments when the schema
				// has a default (its ApplyDefaults writes into the nil
				// map null decodes to). toolroute reads null as no
				// arguments: the answer to {}.
				if a != "null" {
					t.Errorf("%s %s: the SDK panicked: %v", name, label, wantErr)
					continue
				}
				want, wantErr = sdkCS.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(`{}`)})
				sdkPanics = true
			}
			if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Errorf("%s %s: error %v, the SDK's %v", name, label, gotErr, wantErr)
				continue
			}
			if gotErr != nil {
				continue
			}
			if got.IsError != want.IsError || !cmp.Equal(texts(got), texts(want)) ||
				!cmp.Equal(got.StructuredContent, want.StructuredContent) {
				t.Errorf("%s %s:\n got isError %v %q %v\nSDK isError %v %q %v", name, label,
					got.IsError, texts(got), got.StructuredContent, want.IsError, texts(want), want.StructuredContent)
			}
		}
	}
}

// FuzzSDKParity calls every parity tool with arbitrary argument JSON on
// both servers and wants the same strictness: both refuse (an isError
// result or a protocol error) or both answer, and when both answer, the
// same result. Texts are compared by TestSDKParity only: when arguments
// break several rules, the validator names whichever it meets first in
// a Go map's order, on either server.
//
//	go test ./tool -run '^$' -fuzz '^FuzzSDKParity$' -fuzztime 60s
func FuzzSDKParity(f *testing.F) {
	for _, a := range parityArgs {
		if len(a) < 200 {
			f.Add(a)
		}
	}
	oursCS, sdkCS := paritySessions(f)
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, a string) {
		if !json.Valid([]byte(a)) || strings.TrimSpace(a) == "" {
			return // the client sends only JSON; the transport refuses the rest
		}
		for _, name := range parityTools {
			params := &mcp.CallToolParams{Name: name, Arguments: json.RawMessage(a)}
			got, gotErr := oursCS.CallTool(ctx, params)
			want, wantErr := sdkCS.CallTool(ctx, params)
			if wantErr != nil && strings.Contains(wantErr.Error(), sdkPanicked) {
				continue // go-sdk #1062's crash (see TestSDKParity): nothing to compare
			}
			if (gotErr != nil) != (wantErr != nil) {
				t.Fatalf("%s %s: error %v, the SDK's %v", name, a, gotErr, wantErr)
			}
			if gotErr != nil {
				continue
			}
			if got.IsError != want.IsError {
				t.Fatalf("%s %s: isError %v %q, the SDK's %v %q", name, a, got.IsError, texts(got), want.IsError, texts(want))
			}
			if !got.IsError && (!cmp.Equal(texts(got), texts(want)) || !cmp.Equal(got.StructuredContent, want.StructuredContent)) {
				t.Fatalf("%s %s:\n got %q %v\nSDK %q %v", name, a, texts(got), got.StructuredContent, texts(want), want.StructuredContent)
			}
		}
	})
}
