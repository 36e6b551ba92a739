package statelesshttp_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/internal/serve/statelesshttp"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
)

// A probe is one request of the corpus.
type probe struct {
	name    string
	method  string // "" selects POST
	header  map[string]string
	host    string
	body    string
	noAccpt bool // send no Accept header
	plain   bool // the fast path must serve it (not the SDK's handler)
}

// corpusServer is an SDK server with the features the corpus reaches:
// tools that answer, fail, send progress and log notifications, ask the
// client (which a stateless server cannot), and close their stream; a
// prompt, a resource and a template.
func corpusServer() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "diff", Version: "1"}, nil)
	type echoIn struct {
		Text  string `json:"text"`
		Count int    `json:"count,omitempty"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echo."}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, echoIn, error) {
		return nil, in, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Fails."}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return nil, nil, errors.New("it failed")
	})
	mcp.AddTool(s, &mcp.Tool{Name: "progress", Description: "Reports progress and logs."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		tok := req.Params.GetProgressToken()
		for i := range 3 {
			if tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: float64(i), Message: fmt.Sprint("step ", i)}); err != nil {
					return nil, nil, err
				}
			}
		}
		// Sent outside the call's context: no stream takes it.
		detached := req.Session.NotifyProgress(context.Background(), &mcp.ProgressNotificationParams{ProgressToken: "x", Progress: 1})
		logged := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "warning", Data: "careful"})
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("detached: %v; logged: %v", detached != nil, logged)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "sample", Description: "Asks the client."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		_, err := req.Session.CreateMessage(ctx, &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
		return nil, nil, err
	})
	mcp.AddTool(s, &mcp.Tool{Name: "close", Description: "Closes its stream."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if req.Extra != nil && req.Extra.CloseSSEStream != nil {
			req.Extra.CloseSSEStream(mcp.CloseSSEStreamArgs{RetryAfter: 1500_000_000})
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "after close"}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "whoami", Description: "Echoes a request header."}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "x-caller: " + req.Extra.Header.Get("X-Caller") + "; version: " + req.Session.InitializeParams().ProtocolVersion}}}, nil, nil
	})
	s.AddTool(&mcp.Tool{Name: "region", Description: "Has an x-mcp-header argument.", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "region"}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet", Arguments: []*mcp.PromptArgument{{Name: "who", Required: true}}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hello " + req.Params.Arguments["who"]}}}}, nil
	})
	s.AddResource(&mcp.Resource{URI: "mem://a", Name: "a", MIMEType: "text/plain"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "mem://a", Text: "A"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "mem://{x}", Name: "x"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError(req.Params.URI)
	})
	return s
}

// headerParams is corpusServer's Options.HeaderParams: only its tools
// without an x-mcp-header argument report false.
func headerParams(name string) bool {
	return !slices.Contains([]string{"echo", "fail", "progress", "sample", "close", "whoami"}, name)
}

// legacy are the protocol versions before 2026-07-28; "" is a request
// without the header.
var legacy = []string{"", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"}

func call(id, method, params string) string {
	if params == "" {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `"}`
	}
	return `{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`
}

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"}}`

// corpus is every request both handlers answer.
func corpus() []probe {
	var ps []probe
	plainCalls := []struct{ name, method, params string }{
		{"echo", "tools/call", `{"name":"echo","arguments":{"text":"hi","count":2}}`},
		{"echo spaced", "tools/call", ` { "name" : "echo", "arguments" : { "text" : "h\"i" } } `},
		{"echo bad args", "tools/call", `{"name":"echo","arguments":{"text":3}}`},
		{"unknown tool", "tools/call", `{"name":"nope","arguments":{}}`},
		{"failing tool", "tools/call", `{"name":"fail","arguments":{}}`},
		{"progress", "tools/call", `{"name":"progress","arguments":{},"_meta":{"progressToken":"p1"}}`},
		{"progress without token", "tools/call", `{"name":"progress","arguments":{}}`},
		{"sampling refused", "tools/call", `{"name":"sample","arguments":{}}`},
		{"close stream", "tools/call", `{"name":"close","arguments":{}}`},
		{"header and version", "tools/call", `{"name":"whoami","arguments":{}}`},
		{"tools/list", "tools/list", `{}`},
		{"tools/list cursor", "tools/list", `{"cursor":"bogus"}`},
		{"prompts/list", "prompts/list", `{}`},
		{"prompts/get", "prompts/get", `{"name":"greet","arguments":{"who":"you"}}`},
		{"prompts/get missing arg", "prompts/get", `{"name":"greet"}`},
		{"resources/list", "resources/list", `{}`},
		{"resources/read", "resources/read", `{"uri":"mem://a"}`},
		{"resources/read template", "resources/read", `{"uri":"mem://zz"}`},
		{"resources/templates/list", "resources/templates/list", `{}`},
		{"completion", "completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"y"}}`},
		{"ping", "ping", `{}`},
	}
	for _, v := range legacy {
		h := map[string]string{"X-Caller": "c1"}
		if v != "" {
			h["Mcp-Protocol-Version"] = v
		}
		tag := cmp.Or(v, "no version")
		for _, c := range plainCalls {
			ps = append(ps, probe{name: tag + ": " + c.name, header: h, body: call("7", c.method, c.params), plain: true})
		}
		ps = append(ps,
			probe{name: tag + ": string id", header: h, body: call(`"abc"`, "ping", `{}`), plain: true},
			probe{name: tag + ": negative id", header: h, body: call("-3", "ping", `{}`), plain: true},
			probe{name: tag + ": float id", header: h, body: call("1.5", "ping", `{}`)},
			probe{name: tag + ": huge id", header: h, body: call("123456789012345678901", "ping", `{}`)},
			probe{name: tag + ": null id", header: h, body: call("null", "ping", `{}`)},
			probe{name: tag + ": bool id", header: h, body: call("true", "ping", `{}`)},
			probe{name: tag + ": no params", header: h, body: call("1", "tools/list", "")},
			probe{name: tag + ": null params", header: h, body: call("1", "tools/call", "null")},
			probe{name: tag + ": array params", header: h, body: call("1", "tools/call", "[]")},
			probe{name: tag + ": call without params", header: h, body: call("1", "tools/call", "")},
			probe{name: tag + ": initialize", header: h, body: call("1", "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}`)},
			probe{name: tag + ": setLevel", header: h, body: call("1", "logging/setLevel", `{"level":"debug"}`)},
			probe{name: tag + ": subscribe", header: h, body: call("1", "resources/subscribe", `{"uri":"mem://a"}`)},
			probe{name: tag + ": discover", header: h, body: call("1", "server/discover", `{}`)},
			probe{name: tag + ": unknown method", header: h, body: call("1", "tools/frobnicate", `{}`)},
			probe{name: tag + ": initialized", header: h, body: `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
			probe{name: tag + ": cancelled", header: h, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}`},
			probe{name: tag + ": notification with id", header: h, body: call("1", "notifications/initialized", `{}`)},
			probe{name: tag + ": call without id", header: h, body: `{"jsonrpc":"2.0","method":"tools/list","params":{}}`},
			probe{name: tag + ": response", header: h, body: `{"jsonrpc":"2.0","id":1,"result":{}}`},
			probe{name: tag + ": version 1.0", header: h, body: `{"jsonrpc":"1.0","id":1,"method":"ping","params":{}}`},
			probe{name: tag + ": no version tag", header: h, body: `{"id":1,"method":"ping","params":{}}`},
			probe{name: tag + ": extra member", header: h, body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{},"x":1}`},
			probe{name: tag + ": duplicate member", header: h, body: `{"jsonrpc":"2.0","id":1,"id":2,"method":"ping","params":{}}`},
			probe{name: tag + ": capitalised member", header: h, body: `{"jsonrpc":"2.0","id":1,"Method":"ping","params":{}}`},
			probe{name: tag + ": trailing data", header: h, body: call("1", "ping", `{}`) + ` {}`},
			probe{name: tag + ": trailing space", header: h, body: call("1", "ping", `{}`) + " \n", plain: true},
			probe{name: tag + ": malformed", header: h, body: `{"jsonrpc":"2.0","id":1,"method":`},
			probe{name: tag + ": not JSON", header: h, body: `hello`},
			probe{name: tag + ": empty body", header: h, body: ``},
			probe{name: tag + ": batch", header: h, body: `[` + call("1", "ping", `{}`) + `,` + call("2", "tools/list", `{}`) + `]`},
			probe{name: tag + ": empty batch", header: h, body: `[]`},
			probe{name: tag + ": deep", header: h, body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"x","deep":`+strings.Repeat("[", 1100)+strings.Repeat("]", 1100)+`}}`)},
			probe{name: tag + ": invalid UTF-8", header: h, body: call("1", "tools/call", "{\"name\":\"echo\",\"arguments\":{\"text\":\"\xff\"}}")},
			probe{name: tag + ": escaped text", header: h, body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"\u00e9"}}`)},
			probe{name: tag + ": new-protocol _meta", header: h, body: call("1", "tools/list", `{`+meta2026+`}`)},
		)
	}
	// MCP 2026-07-28 requests.
	h26 := func(method, name string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method}
		if name != "" {
			h["Mcp-Name"] = name
		}
		return h
	}
	ps = append(ps,
		probe{name: "2026: echo", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"hi"},`+meta2026+`}`), plain: true},
		probe{name: "2026: echo, meta first", header: h26("tools/call", "echo"), body: call(`"e"`, "tools/call", `{`+meta2026+`,"arguments":{"text":"hi"},"name":"echo"}`), plain: true},
		probe{name: "2026: fail", header: h26("tools/call", "fail"), body: call("1", "tools/call", `{"name":"fail",`+meta2026+`}`), plain: true},
		probe{name: "2026: sample", header: h26("tools/call", "sample"), body: call("1", "tools/call", `{"name":"sample","arguments":{},`+meta2026+`}`), plain: true},
		probe{name: "2026: close", header: h26("tools/call", "close"), body: call("1", "tools/call", `{"name":"close","arguments":{},`+meta2026+`}`), plain: true},
		probe{name: "2026: whoami", header: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "whoami", "X-Caller": "c1"}, body: call("1", "tools/call", `{"name":"whoami","arguments":{},`+meta2026+`}`), plain: true},
		probe{name: "2026: bad arguments", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":5},`+meta2026+`}`), plain: true},
		probe{name: "2026: no Mcp-Name", header: h26("tools/call", ""), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"hi"},`+meta2026+`}`)},
		probe{name: "2026: Mcp-Name case", header: h26("tools/call", "ECHO"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"hi"},`+meta2026+`}`)},
		probe{name: "2026: call under Mcp-Method tools/list", header: h26("tools/list", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"hi"},`+meta2026+`}`)},
		probe{name: "2026: no name in body", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"arguments":{"text":"hi"},`+meta2026+`}`)},
		probe{name: "2026: name twice", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"fail","name":"echo",`+meta2026+`}`)},
		probe{name: "2026: NAME", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"NAME":"fail","name":"echo",`+meta2026+`}`)},
		probe{name: "2026: name not a string", header: h26("tools/call", "5"), body: call("1", "tools/call", `{"name":5,`+meta2026+`}`)},
		probe{name: "2026: arguments not an object", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":"x",`+meta2026+`}`), plain: true},
		probe{name: "2026: name in arguments", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"name"},`+meta2026+`}`), plain: true},
		probe{name: "2026: requestState", header: h26("tools/call", "echo"), body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"hi"},"requestState":"s",`+meta2026+`}`)},
		probe{name: "2026: header tool, right Mcp-Param", header: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "region", "Mcp-Param-Region": "eu"}, body: call("1", "tools/call", `{"name":"region","arguments":{"region":"eu"},`+meta2026+`}`)},
		probe{name: "2026: header tool, wrong Mcp-Param", header: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "region", "Mcp-Param-Region": "us"}, body: call("1", "tools/call", `{"name":"region","arguments":{"region":"eu"},`+meta2026+`}`)},
		probe{name: "2026: header tool, no Mcp-Param", header: h26("tools/call", "region"), body: call("1", "tools/call", `{"name":"region","arguments":{"region":"eu"},`+meta2026+`}`)},
		probe{name: "2026: prompt", header: h26("prompts/get", "greet"), body: call("1", "prompts/get", `{"name":"greet","arguments":{"who":"y"},`+meta2026+`}`), plain: true},
		probe{name: "2026: unknown prompt", header: h26("prompts/get", "nope"), body: call("1", "prompts/get", `{"name":"nope",`+meta2026+`}`), plain: true},
		probe{name: "2026: prompt argument not a string", header: h26("prompts/get", "greet"), body: call("1", "prompts/get", `{"name":"greet","arguments":{"who":1},`+meta2026+`}`)},
		probe{name: "2026: prompt name mismatch", header: h26("prompts/get", "greet2"), body: call("1", "prompts/get", `{"name":"greet","arguments":{"who":"y"},`+meta2026+`}`)},
		probe{name: "2026: resource", header: h26("resources/read", "mem://a"), body: call("1", "resources/read", `{"uri":"mem://a",`+meta2026+`}`), plain: true},
		probe{name: "2026: template resource", header: h26("resources/read", "mem://b"), body: call("1", "resources/read", `{"uri":"mem://b",`+meta2026+`}`), plain: true},
		probe{name: "2026: resource uri mismatch", header: h26("resources/read", "mem://b"), body: call("1", "resources/read", `{"uri":"mem://a",`+meta2026+`}`)},
		probe{name: "2026: resource no Mcp-Name", header: h26("resources/read", ""), body: call("1", "resources/read", `{"uri":"mem://a",`+meta2026+`}`)},
		probe{name: "2026: unknown tool", header: h26("tools/call", "nope"), body: call("1", "tools/call", `{"name":"nope","arguments":{},`+meta2026+`}`)},
		probe{name: "2026: name mismatch", header: h26("tools/call", "other"), body: call("1", "tools/call", `{"name":"echo","arguments":{},`+meta2026+`}`)},
		probe{name: "2026: no Mcp-Method", header: map[string]string{"Mcp-Protocol-Version": "2026-07-28"}, body: call("1", "tools/list", `{`+meta2026+`}`)},
		probe{name: "2026: no _meta", header: h26("tools/list", ""), body: call("1", "tools/list", `{}`)},
		probe{name: "2026: tools/list", header: h26("tools/list", ""), body: call("1", "tools/list", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: tools/list cursor", header: h26("tools/list", ""), body: call(`"s"`, "tools/list", `{"cursor":"bogus",`+meta2026+`}`), plain: true},
		probe{name: "2026: prompts/list", header: h26("prompts/list", ""), body: call("1", "prompts/list", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: resources/list", header: h26("resources/list", ""), body: call("1", "resources/list", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: templates", header: h26("resources/templates/list", ""), body: call("1", "resources/templates/list", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: completion", header: h26("completion/complete", ""), body: call("1", "completion/complete", `{"ref":{"type":"ref/prompt","name":"greet"},"argument":{"name":"who","value":"y"},`+meta2026+`}`), plain: true},
		probe{name: "2026: discover", header: h26("server/discover", ""), body: call("1", "server/discover", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: ping (removed: 404)", header: h26("ping", ""), body: call("1", "ping", `{`+meta2026+`}`), plain: true},
		probe{name: "2026: no capabilities (400)", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`), plain: true},
		probe{name: "2026: bad capabilities (400)", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":7}}`), plain: true},
		probe{name: "2026: meta version mismatch", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}}}`)},
		probe{name: "2026: meta version twice", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)},
		probe{name: "2026: _META", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_META":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`)},
		probe{name: "2026: meta twice", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{},`+meta2026+`}`)},
		probe{name: "2026: meta version spaced", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion" : "2026-07-28" ,"io.modelcontextprotocol/clientCapabilities":{}}}`), plain: true},
		probe{name: "2026: meta not an object", header: h26("tools/list", ""), body: call("1", "tools/list", `{"_meta":"protocolVersion"}`)},
		probe{name: "2026: Mcp-Method mismatch", header: h26("prompts/list", ""), body: call("1", "tools/list", `{`+meta2026+`}`)},
		probe{name: "2026: unknown method", header: h26("x/y", ""), body: call("1", "x/y", `{`+meta2026+`}`)},
		probe{name: "2026: initialize", header: h26("initialize", ""), body: call("1", "initialize", `{"protocolVersion":"2026-07-28","capabilities":{},"clientInfo":{"name":"c","version":"1"},`+meta2026+`}`)},
		probe{name: "2026: later version", header: map[string]string{"Mcp-Protocol-Version": "2027-01-01", "Mcp-Method": "tools/list"}, body: call("1", "tools/list", `{`+meta2026+`}`)},
		probe{name: "2026: notification", header: h26("notifications/cancelled", ""), body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`},
		probe{name: "2026: progress", header: h26("tools/call", "progress"), body: call("1", "tools/call", `{"name":"progress","arguments":{},"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}`), plain: true},
		probe{name: "unsupported version", header: map[string]string{"Mcp-Protocol-Version": "1999-01-01"}, body: call("1", "ping", `{}`)},
		probe{name: "meta version on a 2025 header", header: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, body: call("1", "tools/call", `{"name":"echo","arguments":{"text":"a"},`+meta2026+`}`)},
	)
	ping := call("1", "ping", `{}`)
	v := map[string]string{"Mcp-Protocol-Version": "2025-11-25"}
	with := func(k, val string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2025-11-25", k: val}
		return h
	}
	ps = append(ps,
		probe{name: "GET", method: http.MethodGet, header: v},
		probe{name: "DELETE", method: http.MethodDelete, header: v},
		probe{name: "PUT", method: http.MethodPut, header: v, body: ping},
		probe{name: "no content type", header: with("Content-Type", ""), body: ping},
		probe{name: "text content type", header: with("Content-Type", "text/plain"), body: ping},
		probe{name: "json with charset", header: with("Content-Type", "application/json; charset=utf-8"), body: ping, plain: true},
		probe{name: "JSON upper case", header: with("Content-Type", "Application/JSON"), body: ping, plain: true},
		probe{name: "bad media type", header: with("Content-Type", "application/json;;"), body: ping},
		probe{name: "no Accept", header: v, noAccpt: true, body: ping},
		probe{name: "Accept json only", header: with("Accept", "application/json"), body: ping},
		probe{name: "Accept events only", header: with("Accept", "text/event-stream"), body: ping},
		probe{name: "Accept wildcard", header: with("Accept", "*/*"), body: ping, plain: true},
		probe{name: "Accept with params", header: with("Accept", "application/json;q=0.9, TEXT/EVENT-STREAM"), body: ping, plain: true},
		probe{name: "Accept subtypes", header: with("Accept", "application/*, text/*"), body: ping, plain: true},
		probe{name: "Last-Event-ID", header: with("Last-Event-ID", "x_1"), body: ping},
		probe{name: "session id ignored", header: with("Mcp-Session-Id", "s1"), body: ping, plain: true},
		probe{name: "DNS rebinding", header: v, host: "evil.example", body: ping},
		probe{name: "localhost host", header: v, host: "localhost", body: ping, plain: true},
	)
	return ps
}

// send sends p to url and returns what the client sees.
func send(t *testing.T, url string, p probe) mcptest.Seen {
	t.Helper()
	req := mcptest.Request(t, p.method, url, p.header, p.body)
	if p.noAccpt {
		req.Header.Del("Accept")
	}
	if p.host != "" {
		req.Host = p.host
	}
	return mcptest.Do(t, req)
}

// servers serves s through go-sdk's stateless handler and through a
// Handler in front of another one, and returns a function that compares
// what a client sees of p from both, and checks whether the fast path
// served it.
func servers(t *testing.T, s *mcp.Server) (check func(t *testing.T, p probe)) {
	sdkOpts := &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}
	sdk := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, sdkOpts))
	t.Cleanup(sdk.Close)
	var handedOn atomic.Int64
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, sdkOpts)
	h := statelesshttp.New(s, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handedOn.Add(1)
		inner.ServeHTTP(w, r)
	}), statelesshttp.Options{HeaderParams: headerParams})
	own := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.Serve(w, r, body)
	}))
	t.Cleanup(own.Close)
	return func(t *testing.T, p probe) {
		t.Helper()
		want := send(t, sdk.URL, p)
		before := handedOn.Load()
		got := send(t, own.URL, p)
		// go-sdk's allowsessionsinstateless gives each initialize a
		// session id of its own: random, the one thing to normalise.
		for _, a := range []mcptest.Seen{want, got} {
			if a.Header.Get("Mcp-Session-Id") != "" {
				a.Header.Set("Mcp-Session-Id", "(random)")
			}
		}
		if strings.HasPrefix(p.body, "[") {
			// go-sdk answers a batch's calls as each finishes: in any
			// order, on either side.
			want.Body, got.Body = unordered(want.Body), unordered(got.Body)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Errorf("answers differ (-sdk +own):\n%s", diff)
		}
		if served := handedOn.Load() == before; served != p.plain {
			t.Errorf("served by the fast path: %v, want %v", served, p.plain)
		}
	}
}

// unordered is body, the answer to a batch, with its parts in one order:
// its server-sent events, or the members of its JSON array, sorted.
func unordered(body string) string {
	var members []json.RawMessage
	if json.Unmarshal([]byte(body), &members) == nil {
		parts := make([]string, len(members))
		for i, m := range members {
			parts[i] = string(m)
		}
		slices.Sort(parts)
		return "[" + strings.Join(parts, ",") + "]"
	}
	events := strings.Split(body, "\n\n")
	slices.Sort(events)
	return strings.Join(events, "\n\n")
}

// TestDifferential sends the corpus to go-sdk's stateless handler and to
// the Handler in front of another one, and compares what a client sees;
// and checks which requests the fast path served itself.
func TestDifferential(t *testing.T) {
	check := servers(t, corpusServer())
	ps := corpus()
	names := map[string]bool{}
	for _, p := range ps {
		if names[p.name] {
			t.Fatalf("two probes named %q", p.name)
		}
		names[p.name] = true
	}
	for _, p := range ps {
		t.Run(p.name, func(t *testing.T) { check(t, p) })
	}
	if n := slices.IndexFunc(ps, func(p probe) bool { return p.plain }); n < 0 {
		t.Fatal("no plain probe")
	}
}

// TestNarrowedVersions: a server that serves fewer protocol versions
// (ServerOptions.SupportedProtocolVersions) is answered alike too: the
// fast path serves only the versions the server serves, and asks which
// without any middleware seeing it.
func TestNarrowedVersions(t *testing.T) {
	for _, versions := range [][]string{{"2025-06-18", "2026-07-28"}, {"2025-06-18"}} {
		s := mcp.NewServer(&mcp.Implementation{Name: "narrow", Version: "1"}, &mcp.ServerOptions{SupportedProtocolVersions: versions})
		var seen atomic.Int64
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				seen.Add(1)
				return next(ctx, method, req)
			}
		})
		check := servers(t, s)
		if n := seen.Load(); n != 0 {
			t.Fatalf("%v: New reached the middleware %d times", versions, n)
		}
		for _, p := range []probe{
			{name: "served version", header: map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, body: call("1", "tools/list", `{}`), plain: true},
			{name: "version not served", header: map[string]string{"Mcp-Protocol-Version": "2025-11-25"}, body: call("1", "tools/list", `{}`)},
			{name: "no version", body: call("1", "tools/list", `{}`), plain: true},
			{name: "2026", header: map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list"}, body: call("1", "tools/list", `{`+meta2026+`}`), plain: true},
		} {
			t.Run(fmt.Sprint(versions, "/", p.name), func(t *testing.T) { check(t, p) })
		}
	}
}

// TestCompatibilitySettings: with go-sdk compatibility settings
// (MCPGODEBUG, read at start), the Handler hands every request to the
// SDK's handler. The test runs itself again with the setting.
func TestCompatibilitySettings(t *testing.T) {
	if os.Getenv("MCPGODEBUG") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCompatibilitySettings$", "-test.count=1")
		cmd.Env = append(os.Environ(), "MCPGODEBUG=allowsessionsinstateless=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("with MCPGODEBUG: %v\n%s", err, out)
		}
		return
	}
	check := servers(t, corpusServer())
	for _, p := range corpus() {
		p.plain = false
		t.Run(p.name, func(t *testing.T) { check(t, p) })
	}
}
