package upstream_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// deps is the tests' container: fixed endpoints, and a logger that
// records what upstream logs.
type deps struct {
	upstream.Endpoints
	log *slog.Logger
}

func (d *deps) Logger() *slog.Logger { return d.log }

// seen is one request as the upstream received it.
type seen struct {
	Method string
	// URI is the request target as sent: the escaped path and the raw
	// query.
	URI    string
	Header http.Header // the headers a test looks at (see recorder)
	Body   string
}

// recorder is a real 127.0.0.1 upstream that records every request and
// answers with answer (nil: 200 {"ok": true}).
type recorder struct {
	url    string
	mu     sync.Mutex
	seen   []seen
	answer http.HandlerFunc
}

// recorded headers: what the tests check the request carries.
var recordedHeaders = []string{"Accept", "Content-Type", "Authorization", "X-Request-Id", "X-Tag", "X-Tags"}

func newRecorder(t testing.TB, answer http.HandlerFunc) *recorder {
	t.Helper()
	rec := &recorder{answer: answer}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := http.Header{}
		for _, k := range recordedHeaders {
			if v := r.Header.Values(k); len(v) > 0 {
				h[k] = v
			}
		}
		rec.mu.Lock()
		rec.seen = append(rec.seen, seen{Method: r.Method, URI: r.RequestURI, Header: h, Body: string(body)})
		rec.mu.Unlock()
		if rec.answer != nil {
			rec.answer(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"ok": true}`)
	}))
	t.Cleanup(srv.Close)
	rec.url = srv.URL
	return rec
}

func (r *recorder) requests() []seen {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]seen(nil), r.seen...)
}

// answerJSON answers status with the JSON body.
func answerJSON(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

func svc(method, path string) tool.Route { return tool.ServiceRoute("svc", method, path) }

// serve installs the tools on a server whose caller is caller, served
// with d, and connects a client.
func serve(t testing.TB, d *deps, caller authz.Caller, tools ...tool.Tool[*deps]) *mcp.ClientSession {
	t.Helper()
	r := registry.New[*deps]()
	for _, tl := range tools {
		r.Register(tl)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "upstream-test", Version: "v0"}, nil)
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			return next(authz.WithCaller(ctx, caller), method, req)
		}
	})
	r.Install(s, d)
	return mcptest.Connect(t, s, nil)
}

// forwarding returns a tool that forwards to r, of the given behaviour's
// route set.
func forwarding(name string, r tool.Route, h tool.Handler[*deps]) tool.Tool[*deps] {
	return tool.Tool[*deps]{
		Name: name, Description: "forwards " + r.String(), ServiceKey: "svc",
		VisibilityRoutes: []tool.Route{r},
		Behaviour:        behaviourOf(r.Method),
		Handler:          h,
	}
}

// callTool calls name with args and returns the result's text and
// whether it is an error; a protocol error fails the test.
func callTool(t testing.TB, cs *mcp.ClientSession, name string, args any) (text string, isError bool, structured any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		json.Unmarshal(data, &structured)
	}
	return b.String(), res.IsError, structured
}

// logs returns a logger writing text records to a buffer, and the buffer.
func logs() (*slog.Logger, *syncbuf.Buffer) {
	var b syncbuf.Buffer
	return slog.New(slog.NewTextHandler(&b, nil)), &b
}

func behaviourOf(method string) behaviour.Behaviour {
	switch method {
	case http.MethodGet, http.MethodHead:
		return behaviour.ReadOnly
	case http.MethodPost:
		return behaviour.Additive
	}
	return behaviour.Destructive
}
