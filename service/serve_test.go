package service_test

import (
	"context"
	"io"
	"net/http"
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
)

// pingRoute is the route of the ping tool of these tests.
var pingRoute = tool.ServiceRoute("things", http.MethodGet, "/api/v1/things/{id}")

// pingDeps is the container of the ping tool: the kit's client.
type pingDeps struct {
	url    string
	client *http.Client
}

// pingRegistry is a registry with one tool calling the upstream things.
func pingRegistry() *registry.Registry[*pingDeps] {
	reg := registry.New[*pingDeps]()
	reg.Register(tool.Tool[*pingDeps]{
		Name: "ping", Description: "Ask the things API for thing 1.", ServiceKey: "things",
		VisibilityRoutes: []tool.Route{pingRoute}, Behaviour: behaviour.ReadOnly,
		Handler: tool.Handle(func(ctx context.Context, d *pingDeps, _ *mcp.CallToolRequest, _ struct{}) (struct{ Status int }, error) {
			r, _ := pingRoute.Bind(map[string]string{"id": "1"})
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, d.url+r.ServicePath(), nil)
			resp, err := d.client.Do(req)
			if err != nil {
				return struct{ Status int }{}, err
			}
			resp.Body.Close()
			return struct{ Status int }{resp.StatusCode}, nil
		}),
	})
	return reg
}

func pingCommand() service.Command {
	return service.Command{
		Name: "ping-mcp",
		Options: []fx.Option{
			server.Tools(pingRegistry()),
			fx.Provide(func(up service.Upstreams) *pingDeps { return &pingDeps{up.URL("things"), up.Client("things")} }),
		},
	}
}

// TestServeFromGo: a Config built in Go, without flags, serves as the
// same flags would: its zero fields take the defaults, and its
// upstream's client carries the caller's bearer through authz's
// transport.
func TestServeFromGo(t *testing.T) {
	api, auth := thingsAPI(t)
	cfg := service.Config{
		Addr:       "127.0.0.1:0",
		PolicyFile: "testdata/things/policy.json",
		TokensFile: "testdata/things/tokens.json",
		Upstreams:  map[string]string{"things": api.URL},
	}
	url := serveConfig(t, pingCommand(), cfg)
	cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ping"})
	if err != nil || res.IsError {
		t.Fatalf("ping = %+v, %v", res, err)
	}
	if got := auth(); len(got) != 1 || got[0] != "Bearer viewer-token" {
		t.Errorf("the upstream saw Authorization %q", got)
	}
}

// serveConfig serves cmd with cfg until the test ends, and returns the
// URL of its MCP endpoint.
func serveConfig(t *testing.T, cmd service.Command, cfg service.Config) string {
	t.Helper()
	url, _ := serveUntilCleanup(t, func(ctx context.Context, stderr io.Writer) error {
		return cmd.Serve(ctx, cfg, strings.NewReader(""), stderr, stderr)
	})
	return url
}

// serveArgs runs cmd with the command line args until the test ends,
// and returns the URL of its MCP endpoint and its standard error.
func serveArgs(t *testing.T, cmd service.Command, args ...string) (string, *syncbuf.Buffer) {
	t.Helper()
	return serveUntilCleanup(t, func(ctx context.Context, stderr io.Writer) error {
		return cmd.Run(ctx, args, strings.NewReader(""), io.Discard, stderr)
	})
}

// serveUntilCleanup runs serve until the test ends, and returns the URL
// it announces and what it wrote to standard error.
func serveUntilCleanup(t *testing.T, serve func(ctx context.Context, stderr io.Writer) error) (string, *syncbuf.Buffer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() { done <- serve(ctx, stderr) }()
	t.Cleanup(func() {
		cancel()
		if err := await.Recv(t, done, "the service's return"); err != nil {
			t.Errorf("the service returned %v", err)
		}
	})
	var url string
	for range 3000 { // bounded wait for the announcement
		if m := regexp.MustCompile(`serving MCP at (\S+)`).FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			t.Fatalf("the service returned %v before serving:\n%s", err, stderr)
		default:
		}
		time.Sleep(10 * time.Millisecond)
	}
	if url == "" {
		t.Fatalf("no announcement:\n%s", stderr)
	}
	return url, stderr
}

// TestSDKTransportFlag: -sdk-transport serves stateless HTTP through
// go-sdk's own handler, and says so at the start; the calls are answered
// as ever.
func TestSDKTransportFlag(t *testing.T) {
	api, _ := thingsAPI(t)
	url, stderr := serveArgs(t, pingCommand(), "-sdk-transport", "-addr", "127.0.0.1:0",
		"-policy", "testdata/things/policy.json", "-tokens", "testdata/things/tokens.json", "-upstream", api.URL)
	if want := "ping-mcp: stateless HTTP through go-sdk's own handler (-sdk-transport)"; !strings.Contains(stderr.String(), want) {
		t.Errorf("the start does not say %q:\n%s", want, stderr)
	}
	cs := servertest.ConnectHTTP(t, url, "viewer-token", servertest.Options{})
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "ping"}); err != nil || res.IsError {
		t.Fatalf("ping = %+v, %v", res, err)
	}
}

// TestServeFromGoChecks: a Config built in Go is refused as the command
// line's would be.
func TestServeFromGoChecks(t *testing.T) {
	for _, tt := range []struct {
		cfg  service.Config
		want string
	}{
		{service.Config{Redis: "redis://127.0.0.1:1/0"}, "-redis needs -state-key-file"},
		{service.Config{Stdio: true, Addr: "127.0.0.1:0"}, "-addr applies to HTTP only"},
		{service.Config{Stdio: true, Caller: "viewer", SDKTransport: true}, "-sdk-transport applies to HTTP only"},
		{service.Config{RateLimit: -1}, "-rate-limit must be 0 (off) or a positive number"},
		{service.Config{ReloadInterval: time.Second}, "-reload-interval needs -policy or -tokens"},
		{service.Config{PolicyFile: "testdata/things/policy.json", TokensFile: "testdata/things/tokens.json"}, `tool ping needs the upstream service "things"`},
		{service.Config{Upstreams: map[string]string{"things": "ftp://x"}}, `-upstream things: "ftp://x": the scheme must be http or https`},
	} {
		err := pingCommand().Serve(context.Background(), tt.cfg, strings.NewReader(""), &syncbuf.Buffer{}, &syncbuf.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Serve(%+v) = %v, want %q", tt.cfg, err, tt.want)
		}
	}
}

// TestPolicyLint: a policy whose rule matches values but not the route
// template (the tool would be hidden from everyone) is an error for
// check, naming the role, the rule and the fix, and a warning at serve's
// start, which goes on.
func TestPolicyLint(t *testing.T) {
	policy := writeFile(t, "policy.json", `[{"role": "viewer", "accessPolicies": [{"path": "^/things/api/v1/things/t-[0-9]+$", "methods": ["GET"], "effect": "allow"}]}]`)
	args := []string{"-policy", policy, "-tokens", "testdata/things/tokens.json", "-upstream", "http://127.0.0.1:1"}
	var stdout, stderr syncbuf.Buffer
	err := pingCommand().Run(context.Background(), append([]string{"check"}, args...), strings.NewReader(""), &stdout, &stderr)
	for _, want := range []string{
		`ping-mcp check: policy lint: -policy ` + policy + `: role "viewer", accessPolicies[0] (allow GET "^/things/api/v1/things/t-[0-9]+$"): matches request paths such as "/things/api/v1/things/t-0"`,
		`Match the segment with [^/]+`,
	} {
		if err == nil || !strings.Contains(stderr.String(), want) {
			t.Errorf("check = %v, stderr lacks %q:\n%s", err, want, &stderr)
		}
	}

	api, _ := thingsAPI(t)
	args[len(args)-1] = api.URL
	ctx, cancel := context.WithCancel(context.Background())
	stderr = syncbuf.Buffer{}
	done := make(chan error, 1)
	go func() {
		done <- pingCommand().Run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), strings.NewReader(""), &stdout, &stderr)
	}()
	for range 3000 { // bounded wait for the announcement
		if strings.Contains(stderr.String(), "serving MCP at") {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	if err := await.Recv(t, done, "Run's return"); err != nil {
		t.Errorf("serve = %v\n%s", err, &stderr)
	}
	if !strings.Contains(stderr.String(), `level=WARN msg="ping-mcp: policy lint: -policy `) || !strings.Contains(stderr.String(), "serving MCP at") {
		t.Errorf("serve did not warn and serve:\n%s", &stderr)
	}
}
