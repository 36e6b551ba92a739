package service_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
	"github.com/toolroute/toolroute/service"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// typedDeps is the container a generated service has: the kit's
// upstreams, embedded.
type typedDeps struct{ service.Upstreams }

type thingArgs struct {
	ID string `json:"id" in:"path"`
}

type thingOut struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}

// TestTypedCallsOnTheKit: a container that embeds service.Upstreams is
// the upstream.Clients of a handler-free tool: its request goes through
// the kit's client (authz's transport: the caller's bearer), and the
// cause of a failed one goes to the service's log, redacted.
func TestTypedCallsOnTheKit(t *testing.T) {
	var auth []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id": "`+strings.TrimPrefix(r.URL.Path, "/api/v1/things/")+`", "name": "a thing"}`)
	}))
	t.Cleanup(api.Close)
	reg := registry.New[*typedDeps]()
	reg.Register(tool.Tool[*typedDeps]{
		Name: "get_thing", Description: "Fetch a thing.", ServiceKey: "things",
		VisibilityRoutes: []tool.Route{pingRoute}, Behaviour: behaviour.ReadOnly,
		Handler: upstream.Forward[*typedDeps, thingArgs, thingOut](pingRoute),
	})
	cmd := service.Command{Name: "typed-mcp", Options: []fx.Option{
		server.Tools(reg),
		fx.Provide(func(up service.Upstreams) *typedDeps { return &typedDeps{up} }),
	}}
	cfg := service.Config{
		Addr:       "127.0.0.1:0",
		PolicyFile: "testdata/things/policy.json",
		TokensFile: "testdata/things/tokens.json",
		Upstreams:  map[string]string{"things": api.URL},
	}
	url, stderr := serveCmd(t, cmd, cfg)
	cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "t 1"}})
	if err != nil || res.IsError {
		t.Fatalf("get_thing = %+v, %v", res, err)
	}
	if got := res.Content[0].(*mcp.TextContent).Text; got != `{"id":"t 1","name":"a thing"}` {
		t.Errorf("get_thing = %s", got)
	}
	if len(auth) != 1 || auth[0] != "Bearer viewer-token" {
		t.Errorf("the upstream saw Authorization %q", auth)
	}

	api.Close() // connection refused from now on
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_thing", Arguments: map[string]any{"id": "viewer-token"}})
	if err != nil || !res.IsError || res.Content[0].(*mcp.TextContent).Text != "upstream unavailable" {
		t.Fatalf("get_thing of a closed upstream = %+v, %v; want upstream unavailable", res, err)
	}
	// The cause, in the service's log, without the caller's bearer (the
	// id repeats it, and the log quotes the request's URL).
	var line string
	for range 500 { // bounded: the record is written before the answer
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, "upstream: request failed") {
				line = l
			}
		}
		if line != "" {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !strings.Contains(line, "tool=get_thing") || !strings.Contains(line, "connection refused") || strings.Contains(line, "viewer-token") {
		t.Errorf("the service's log line of the failure: %q; want the tool, the cause and no bearer:\n%s", line, stderr)
	}
}

// serveCmd serves cmd with cfg until the test ends, and returns its MCP
// URL and its standard error.
func serveCmd(t *testing.T, cmd service.Command, cfg service.Config) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := new(syncbuf.Buffer)
	done := make(chan error, 1)
	go func() { done <- cmd.Serve(ctx, cfg, strings.NewReader(""), stderr, stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := await.Recv(t, done, "Serve's return"); err != nil {
			t.Errorf("Serve returned %v", err)
		}
	})
	for range 3000 { // bounded wait for the announcement
		if m := regexp.MustCompile(`serving MCP at (\S+)`).FindStringSubmatch(stderr.String()); m != nil {
			return m[1], stderr
		}
		select {
		case err := <-done:
			t.Fatalf("Serve returned %v before serving:\n%s", err, stderr)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no announcement:\n%s", stderr)
	return "", nil
}
