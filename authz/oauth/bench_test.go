package oauth_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
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
	jwtURL := mcpServer(b, v.Verify, "http://127.0.0.1:1", nil, server.HTTPOptions{})
	staticURL := mcpServer(b, server.StaticTokens(map[string]authz.Caller{"static-token": {Subject: "carol", Roles: []string{"admin"}}}), "http://127.0.0.1:1", nil, server.HTTPOptions{})
	jwtCS := servertest.ConnectHTTP(b, jwtURL, op.Token(b, "carol"), nil)
	staticCS := servertest.ConnectHTTP(b, staticURL, "static-token", nil)
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "whoami", Arguments: map[string]any{}}
	timed := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("call: %v %v", err, res)
		}
		return time.Since(start)
	}
	var jwtTimes, staticTimes []time.Duration
	for b.Loop() {
		if len(jwtTimes)%2 == 0 {
			jwtTimes = append(jwtTimes, timed(jwtCS))
			staticTimes = append(staticTimes, timed(staticCS))
		} else {
			staticTimes = append(staticTimes, timed(staticCS))
			jwtTimes = append(jwtTimes, timed(jwtCS))
		}
	}
	jm, sm := median(jwtTimes), median(staticTimes)
	b.ReportMetric(float64(sm.Nanoseconds()), "static-ns/call")
	b.ReportMetric(float64(jm.Nanoseconds()), "jwt-ns/call")
	b.ReportMetric(float64(jm)/float64(sm), "ratio")
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
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
