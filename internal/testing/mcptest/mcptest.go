// Package mcptest is the MCP test support every package's tests share:
// [Connect] connects a client to a server in memory, [Post] sends one raw
// JSON-RPC message over streamable HTTP. Only tests may import it (see
// internal/testing/layout); services' tests use the public
// server/servertest, whose Connect also acts as a chosen caller.
package mcptest

import (
	"cmp"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Options tune [Connect]. The zero value (or nil) selects a plain client
// of the SDK's latest protocol version, and a server session without
// context values.
type Options struct {
	// Client connects; nil selects a client without handlers.
	Client *mcp.Client
	// Session is the client session's options (e.g. its protocol
	// version); nil selects the SDK's defaults.
	Session *mcp.ClientSessionOptions
	// ServerContext is the server session's context, whose values reach
	// every handler (e.g. authz.WithCaller's caller); nil selects
	// context.Background.
	ServerContext context.Context
	// Transport, if not nil, wraps the client's transport (e.g. in an
	// mcp.LoggingTransport).
	Transport func(mcp.Transport) mcp.Transport
}

// Connect connects a client to s over in-memory transports and returns
// its session. When the test ends, the client session is closed and the
// server session waited for.
func Connect(tb testing.TB, s *mcp.Server, o *Options) *mcp.ClientSession {
	tb.Helper()
	if o == nil {
		o = &Options{}
	}
	sctx := o.ServerContext
	if sctx == nil {
		sctx = context.Background()
	}
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(sctx, st, nil)
	if err != nil {
		tb.Fatalf("mcptest: server connect: %v", err)
	}
	c := o.Client
	if c == nil {
		c = mcp.NewClient(&mcp.Implementation{Name: "mcptest", Version: "v0.0.0"}, nil)
	}
	var t mcp.Transport = ct
	if o.Transport != nil {
		t = o.Transport(t)
	}
	cs, err := c.Connect(context.Background(), t, o.Session)
	if err != nil {
		ss.Close()
		tb.Fatalf("mcptest: client connect: %v", err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// Post sends body, one JSON-RPC message or batch, to the streamable HTTP
// endpoint url as a POST with the headers a streamable HTTP client sends
// (Content-Type: application/json; Accept: application/json,
// text/event-stream), and those of header (which may be nil) besides or
// instead. It returns the response, whose body is closed when the test
// ends; a request that fails to be sent fails the test.
func Post(tb testing.TB, url string, header http.Header, body string) *http.Response {
	tb.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		tb.Fatalf("mcptest: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, vs := range header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("mcptest: POST %s: %v", url, err)
	}
	tb.Cleanup(func() { resp.Body.Close() })
	return resp
}

// Header is the header of [Post] that sets the Authorization header to
// authorization (none if "") and the Mcp-Protocol-Version header to
// version (none if "").
func Header(authorization, version string) http.Header {
	h := http.Header{}
	if authorization != "" {
		h.Set("Authorization", authorization)
	}
	if version != "" {
		h.Set("Mcp-Protocol-Version", version)
	}
	return h
}

// Request is a streamable HTTP request to url with the headers of
// [Post], and those of header besides or instead; a header set to ""
// is removed. An empty method is POST.
func Request(tb testing.TB, method, url string, header map[string]string, body string) *http.Request {
	tb.Helper()
	req, err := http.NewRequest(cmp.Or(method, http.MethodPost), url, strings.NewReader(body))
	if err != nil {
		tb.Fatalf("mcptest: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return req
}

// Seen is what a client sees of a response: its status, its header but
// Date (the one part that differs between two servers' answers alike),
// and its body.
type Seen struct {
	Status int
	Header http.Header
	Body   string
}

// Do sends req and returns what its client sees of the response; a
// request that fails to be sent, or a body to be read, fails the test.
func Do(tb testing.TB, req *http.Request) Seen {
	tb.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatalf("mcptest: %s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatalf("mcptest: %s %s: reading the body: %v", req.Method, req.URL, err)
	}
	resp.Header.Del("Date")
	return Seen{resp.StatusCode, resp.Header, string(body)}
}
