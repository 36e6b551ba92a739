package servertest

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
)

// Options tune a client connection. The zero value (or nil) selects the
// SDK's defaults: the latest protocol version.
type Options struct {
	// ProtocolVersion, if set, makes the client speak this version (for
	// instance "2025-11-25").
	ProtocolVersion string
	// Client, if set, is the client to connect (for client capabilities
	// and handlers). nil selects a plain client named "servertest".
	Client *mcp.Client
}

func (o Options) client() *mcp.Client {
	if o.Client != nil {
		return o.Client
	}
	return mcp.NewClient(&mcp.Implementation{Name: "servertest", Version: "v0.0.0"}, nil)
}

func (o Options) session() *mcp.ClientSessionOptions {
	if o.ProtocolVersion == "" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: o.ProtocolVersion}
}

// Connect connects a client to s over in-memory transports and returns
// its session, closed when the test ends. If caller is non-nil, the
// server side of the connection acts for it (it takes precedence over
// server.Options.Caller); else the server's configured caller applies.
func Connect(tb testing.TB, s *mcp.Server, caller *authz.Caller, opts Options) *mcp.ClientSession {
	tb.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	sctx := ctx
	if caller != nil {
		sctx = authz.WithCaller(ctx, *caller)
	}
	ss, err := s.Connect(sctx, st, nil)
	if err != nil {
		tb.Fatalf("servertest: server connect: %v", err)
	}
	cs, err := opts.client().Connect(ctx, ct, opts.session())
	if err != nil {
		ss.Close()
		tb.Fatalf("servertest: client connect: %v", err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// ConnectHTTP connects a client to the streamable HTTP endpoint at url,
// sending token as its bearer ("" sends none), and returns its session,
// closed when the test ends.
func ConnectHTTP(tb testing.TB, url, token string, opts Options) *mcp.ClientSession {
	tb.Helper()
	hc := BearerClient(token)
	t := &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc, MaxRetries: -1}
	cs, err := opts.client().Connect(context.Background(), t, opts.session())
	if err != nil {
		hc.CloseIdleConnections()
		tb.Fatalf("servertest: client connect to %s: %v", url, err)
	}
	tb.Cleanup(func() {
		cs.Close()
		// An idle connection, or one dialed and never used, would hold a
		// server's graceful shutdown for seconds.
		hc.CloseIdleConnections()
	})
	return cs
}

// BearerClient returns an HTTP client that sends token as the bearer of
// every request ("" sends none). It has a connection pool of its own:
// call its CloseIdleConnections before shutting a test server down.
func BearerClient(token string) *http.Client {
	return &http.Client{Transport: &bearer{token: token, base: http.DefaultTransport.(*http.Transport).Clone()}}
}

// CloseIdleConnections closes the client's idle connections.
func (b *bearer) CloseIdleConnections() {
	if c, ok := b.base.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

type bearer struct {
	token string
	base  http.RoundTripper
}

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token == "" {
		return b.base.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}
