package server

import (
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/serve/statelesshttp"
)

// TestStatelessTransportByDefault: a stateless endpoint serves through
// toolroute's transport unless HTTPOptions.SDKTransport is set; a
// stateful one never does. (TestTransportsAnswerAlike shows that both
// answer alike, which it cannot tell apart.)
func TestStatelessTransportByDefault(t *testing.T) {
	made := 0
	defer func(f func(*mcp.Server, http.Handler, statelesshttp.Options) *statelesshttp.Handler) {
		statelessTransport = f
	}(statelessTransport)
	statelessTransport = func(s *mcp.Server, sdk http.Handler, opts statelesshttp.Options) *statelesshttp.Handler {
		made++
		return statelesshttp.New(s, sdk, opts)
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	verifier := StaticTokens(map[string]authz.Caller{"t": {Subject: "s"}})
	for _, c := range []struct {
		opts HTTPOptions
		want int
	}{
		{HTTPOptions{Verifier: verifier}, 1},
		{HTTPOptions{Verifier: verifier, SDKTransport: true}, 0},
		{HTTPOptions{Verifier: verifier, Stateful: true}, 0},
	} {
		made = 0
		if _, err := HTTPHandler(s, c.opts); err != nil {
			t.Fatal(err)
		}
		if made != c.want {
			t.Errorf("SDKTransport %v, Stateful %v: %d handlers of toolroute's transport, want %d", c.opts.SDKTransport, c.opts.Stateful, made, c.want)
		}
	}
}
