package oauth_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/benchtools"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/server/servertest"
)

// BenchmarkJWTVerify verifies a provider's token with its keys held
// (budget: 50 µs an op): "signature" verifies it each time (the
// verifier's cache off), "cached" finds it verified.
func BenchmarkJWTVerify(b *testing.B) {
	op := startOP(b)
	tok := op.Token(b, "carol")
	ctx := context.Background()
	for _, bc := range []struct {
		name string
		ttl  time.Duration
	}{{"signature", -1}, {"cached", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			v := newJWTVerifier(b, op, oauth.JWTOptions{CacheTTL: bc.ttl})
			if _, err := v.Verify(ctx, tok, nil); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				if _, err := v.Verify(ctx, tok, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallHTTP compares a tools/call over HTTP with JWT
// verification and with a static token, paired call by call; it reports
// the median of each and their ratio (budget: 1.05).
func BenchmarkCallHTTP(b *testing.B) {
	op := startOP(b)
	v := newJWTVerifier(b, op, oauth.JWTOptions{})
	jwtURL := mcpServer(b, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	staticURL := mcpServer(b, server.StaticTokens(map[string]authz.Caller{"static-token": {Subject: "carol", Roles: []string{"admin"}}}), "http://127.0.0.1:1", nil, server.HTTPServerOptions{})
	jwtCS := servertest.ConnectHTTP(b, jwtURL, op.Token(b, "carol"), servertest.Options{})
	staticCS := servertest.ConnectHTTP(b, staticURL, "static-token", servertest.Options{})
	params := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
	benchtools.Paired(b, "call", "static", benchtools.TimedCall(b, staticCS, params), "jwt", benchtools.TimedCall(b, jwtCS, params))
}

// BenchmarkExchangeCached gets a token for one caller again and again:
// one round trip to the provider in all (reported as idp-round-trips).
func BenchmarkExchangeCached(b *testing.B) {
	op := startOP(b)
	x := newExchanger(b, op, oauth.ExchangeOptions{})
	c := authz.Caller{Subject: "carol", Bearer: op.Token(b, "carol")}
	before := op.Requests("/oauth/token")
	ctx := context.Background()
	for b.Loop() {
		if _, err := x.Token(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(op.Requests("/oauth/token")-before), "idp-round-trips")
}
