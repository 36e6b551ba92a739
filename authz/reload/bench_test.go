package reload_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/reload"
	"github.com/toolroute/toolroute/tool"
)

// benchPolicy is a policy of 20 roles over 200 routes, and the routes.
func benchPolicy(b *testing.B) (*authz.Policy, []tool.Route) {
	b.Helper()
	var routes []tool.Route
	for i := range 200 {
		routes = append(routes, tool.ServiceRoute("svc", http.MethodGet, fmt.Sprintf("/api/r%d/{id}", i)))
	}
	var rps []authz.RolePolicy
	for r := range 20 {
		rps = append(rps, authz.RolePolicyFor(fmt.Sprintf("role%d", r), routes[r*10:r*10+10]))
	}
	p, err := authz.NewPolicy(rps)
	if err != nil {
		b.Fatal(err)
	}
	return p, routes
}

// BenchmarkDecide: one request's decisions (a tools/list batch of 200
// routes, then one call's decision) through a reload.Authorizer in the
// steady state and after reloads, directly and behind authz.Cached.
// After a reload a decision must cost what it did before (≤ 1.05×);
// direct is the policy without a reload.Authorizer, for the cost of the
// indirection.
func BenchmarkDecide(b *testing.B) {
	caller := authz.Caller{Subject: "s", Roles: []string{"role3", "role7"}}
	b.Run("direct", func(b *testing.B) {
		p, routes := benchPolicy(b)
		b.ReportAllocs()
		for b.Loop() {
			ctx := context.Background()
			if _, err := p.AllowMany(ctx, caller, routes); err != nil {
				b.Fatal(err)
			}
			if err := p.Allow(ctx, caller, routes[35]); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, cached := range []bool{false, true} {
		for _, reloads := range []int{0, 100} {
			name := fmt.Sprintf("cached=%v/reloads=%d", cached, reloads)
			b.Run(name, func(b *testing.B) {
				p, routes := benchPolicy(b)
				r := reload.New(p)
				for range reloads {
					next, _ := benchPolicy(b)
					r.Swap(next)
				}
				var a authz.Authorizer = r
				if cached {
					a = authz.Cached(r, time.Hour, 10_000)
				}
				b.ReportAllocs()
				for b.Loop() {
					ctx := r.Pin(context.Background())
					if _, err := a.AllowMany(ctx, caller, routes); err != nil {
						b.Fatal(err)
					}
					if err := a.Allow(ctx, caller, routes[35]); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
