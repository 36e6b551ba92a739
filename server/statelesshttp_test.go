package server_test

import (
	"cmp"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	gocmp "github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/server"
)

// TestTransportsAnswerAlike sends one corpus of requests to two
// HTTPServers of one server.New, one on toolroute's stateless transport
// (the default) and one with HTTPOptions.SDKTransport, and wants what a
// client sees to be the same: status, headers (but Date) and body. The
// corpus reaches what wraps the transport as well: bearer tokens (valid,
// unknown, missing), anonymous callers, hidden tools, panics, the body
// limit, every protocol version, batches, notifications and other
// methods. (internal/serve/statelesshttp's TestDifferential compares the
// transports alone, over a wider corpus of JSON-RPC.)
func TestTransportsAnswerAlike(t *testing.T) {
	for _, anonymous := range []bool{false, true} {
		s, err := server.New(server.Options{Authorizer: adminOnly{}, Logger: discardLogger}, server.Install(testRegistry(), newDeps("diff")))
		if err != nil {
			t.Fatal(err)
		}
		start := func(sdk bool) string {
			opts := server.HTTPOptions{
				Verifier: server.StaticTokens(map[string]authz.Caller{
					"admin-token": {Subject: "ada", Roles: []string{"admin"}},
					"user-token":  {Subject: "bob"},
				}),
				MaxRequestBodyBytes: 2048,
				SDKTransport:        sdk,
			}
			if anonymous {
				opts.Anonymous = &authz.Caller{Subject: "anon", Roles: []string{"admin"}}
			}
			hs, err := server.NewHTTPServer(s, server.HTTPServerOptions{Endpoint: opts})
			if err != nil {
				t.Fatal(err)
			}
			ts := httptest.NewServer(hs.Handler())
			t.Cleanup(ts.Close)
			return ts.URL + "/mcp"
		}
		own, sdk := start(false), start(true)
		for _, p := range serverCorpus() {
			t.Run(map[bool]string{false: "bearer", true: "anonymous"}[anonymous]+"/"+p.name, func(t *testing.T) {
				want, got := sendProbe(t, sdk, p), sendProbe(t, own, p)
				if diff := gocmp.Diff(want, got); diff != "" {
					t.Errorf("answers differ (-SDKTransport +default):\n%s", diff)
				}
			})
		}
	}
}

type httpProbe struct {
	name   string
	method string
	header map[string]string
	body   string
}

const meta2026 = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}`

func serverCorpus() []httpProbe {
	var ps []httpProbe
	tokens := []string{"admin-token", "user-token", "unknown-token", ""}
	calls := []struct{ name, method, params string }{
		{"tools/list", "tools/list", `{}`},
		{"whoami", "tools/call", `{"name":"whoami","arguments":{}}`},
		{"echo", "tools/call", `{"name":"echo","arguments":{"text":"hi"}}`},
		{"echo bad args", "tools/call", `{"name":"echo","arguments":{"text":1}}`},
		{"hidden or not", "tools/call", `{"name":"get_thing","arguments":{"id":"7"}}`},
		{"fail", "tools/call", `{"name":"fail","arguments":{}}`},
		{"panic", "tools/call", `{"name":"boom","arguments":{}}`},
		{"unknown tool", "tools/call", `{"name":"nope","arguments":{}}`},
		{"ping", "ping", `{}`},
		{"prompts/list", "prompts/list", `{}`},
	}
	for _, tok := range tokens {
		for _, v := range []string{"", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"} {
			h := map[string]string{}
			if tok != "" {
				h["Authorization"] = "Bearer " + tok
			}
			if v != "" {
				h["Mcp-Protocol-Version"] = v
			}
			tag := cmp.Or(tok, "no token") + "/" + cmp.Or(v, "no version")
			for _, c := range calls {
				params, hh := c.params, h
				if v == "2026-07-28" {
					sep := ","
					if params == "{}" {
						sep = ""
					}
					params = strings.TrimSuffix(params, "}") + sep + meta2026 + "}"
					hh = map[string]string{"Mcp-Method": c.method}
					for k, x := range h {
						hh[k] = x
					}
					if c.method == "tools/call" {
						hh["Mcp-Name"] = strings.Split(strings.TrimPrefix(c.params, `{"name":"`), `"`)[0]
					}
				}
				ps = append(ps, httpProbe{name: tag + "/" + c.name, header: hh, body: `{"jsonrpc":"2.0","id":3,"method":"` + c.method + `","params":` + params + `}`})
			}
			if v == "2026-07-28" {
				body := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hi"},` + meta2026 + `}}`
				for name, hh := range map[string]map[string]string{
					"name mismatch":    {"Mcp-Method": "tools/call", "Mcp-Name": "whoami"},
					"no Mcp-Name":      {"Mcp-Method": "tools/call"},
					"wrong Mcp-Method": {"Mcp-Method": "tools/list", "Mcp-Name": "echo"},
					"stray Mcp-Param":  {"Mcp-Method": "tools/call", "Mcp-Name": "echo", "Mcp-Param-Text": "hi"},
				} {
					for k, x := range h {
						hh[k] = x
					}
					ps = append(ps, httpProbe{name: tag + "/echo, " + name, header: hh, body: body})
				}
			}
			ps = append(ps,
				httpProbe{name: tag + "/cancelled", header: h, body: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`},
				httpProbe{name: tag + "/batch", header: h, body: `[{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}]`},
				httpProbe{name: tag + "/malformed", header: h, body: `{"jsonrpc":`},
				httpProbe{name: tag + "/oversized", header: h, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"` + strings.Repeat("x", 4096) + `"}}}`},
				httpProbe{name: tag + "/GET", method: http.MethodGet, header: h},
				httpProbe{name: tag + "/DELETE", method: http.MethodDelete, header: h},
				httpProbe{name: tag + "/text body", header: map[string]string{"Authorization": h["Authorization"], "Content-Type": "text/plain"}, body: `{}`},
			)
		}
	}
	return ps
}

func sendProbe(t *testing.T, url string, p httpProbe) mcptest.Seen {
	t.Helper()
	return mcptest.Do(t, mcptest.Request(t, p.method, url, p.header, p.body))
}
