package export_test

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/export"
	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
)

// bigSource is a table of 1,000 tools on 10 services (1 to 3 routes each,
// placeholders and literals) and 20 roles: each granted, as
// RolePolicyFor writes it, the routes of a random third of the tools,
// plus an unanchored allow and a deny.
func bigSource() (registry.RouteTable, []authz.RolePolicy) {
	rng := rand.New(rand.NewPCG(7, 7))
	methods := []string{"GET", "POST", "PUT", "DELETE", "PATCH"}
	var table registry.RouteTable
	for i := range 1000 {
		svc := fmt.Sprintf("svc%d", i%10)
		e := registry.RouteTableEntry{Name: fmt.Sprintf("tool_%04d", i), Behaviour: behaviour.ReadOnly, ServiceKey: svc}
		for j := range 1 + rng.IntN(3) {
			uri := fmt.Sprintf("/%s/api/v1/res%d", svc, i/10)
			if j > 0 {
				uri += fmt.Sprintf("/{id}/sub%d", j)
			}
			e.Routes = append(e.Routes, tool.Route{URI: uri, Method: methods[rng.IntN(len(methods))]})
		}
		table.Tools = append(table.Tools, e)
	}
	var roles []authz.RolePolicy
	for r := range 20 {
		var routes []tool.Route
		for _, t := range table.Tools {
			if rng.IntN(3) == 0 {
				routes = append(routes, t.Routes...)
			}
		}
		rp := authz.RolePolicyFor(fmt.Sprintf("role%02d", r), routes)
		rp.AccessPolicies = append(rp.AccessPolicies,
			authz.AccessPolicy{Path: fmt.Sprintf("/res%d", r), Methods: []string{"GET"}, Effect: authz.Allow},
			authz.AccessPolicy{Path: fmt.Sprintf("^/svc%d/", r%10), Methods: []string{"DELETE"}, Effect: authz.Deny})
		roles = append(roles, rp)
	}
	return table, roles
}

// BenchmarkExport: New (compiling the policy and deciding every role on
// every route) and writing each format, for 1,000 tools × 20 roles.
func BenchmarkExport(b *testing.B) {
	table, roles := bigSource()
	b.Run("New", func(b *testing.B) {
		for b.Loop() {
			if _, err := export.New(table, roles); err != nil {
				b.Fatal(err)
			}
		}
	})
	e, err := export.New(table, roles)
	if err != nil {
		b.Fatal(err)
	}
	for _, format := range export.Formats {
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				if err := e.Write(io.Discard, format, export.Options{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("matrix", func(b *testing.B) {
		for b.Loop() {
			_ = e.Matrix().Text()
		}
	})
}

// BenchmarkDecision: one decision by authz.Policy and by each engine on
// its exported artefact, interleaved in one loop over the same random
// probes of the tricky fixture (Cedar: over the table's templates, its
// space). Reported per engine in ns/decision and as a ratio to Policy.
func BenchmarkDecision(b *testing.B) {
	f := trickyFixture(b)
	o, enf, c := newOPA(b, f), newCasbin(b, f), newCedar(b, f)
	routes := f.routes()
	rng := rand.New(rand.NewPCG(5, 5))
	ps := make([]probe, 1024)
	for i := range ps {
		ps[i] = f.randomProbe(rng, routes)
	}
	ctx := context.Background()
	var tPolicy, tOPA, tCasbin, tCedar, tPolicyTmpl time.Duration
	i := 0
	for b.Loop() {
		p := ps[i%len(ps)]
		r := routes[i%len(routes)]
		i++
		t0 := time.Now()
		f.policy.Allow(ctx, authz.Caller{Subject: "probe", Roles: p.roles}, tool.Route{URI: p.path, Method: p.method})
		t1 := time.Now()
		o.decide(b, p.roles, p.method, p.path)
		t2 := time.Now()
		casbinDecide(b, enf, p.roles, p.method, p.path)
		t3 := time.Now()
		f.policy.Allow(ctx, authz.Caller{Subject: "probe", Roles: p.roles}, r)
		t4 := time.Now()
		c.decide(p.roles, r.Method, "Route", r.URI)
		t5 := time.Now()
		tPolicy += t1.Sub(t0)
		tOPA += t2.Sub(t1)
		tCasbin += t3.Sub(t2)
		tPolicyTmpl += t4.Sub(t3)
		tCedar += t5.Sub(t4)
	}
	n := float64(b.N)
	b.ReportMetric(float64(tPolicy.Nanoseconds())/n, "policy-ns/op")
	b.ReportMetric(float64(tOPA.Nanoseconds())/n, "opa-ns/op")
	b.ReportMetric(float64(tCasbin.Nanoseconds())/n, "casbin-ns/op")
	b.ReportMetric(float64(tCedar.Nanoseconds())/n, "cedar-ns/op")
	b.ReportMetric(float64(tOPA)/float64(tPolicy), "opa/policy")
	b.ReportMetric(float64(tCasbin)/float64(tPolicy), "casbin/policy")
	b.ReportMetric(float64(tCedar)/float64(tPolicyTmpl), "cedar/policy")
}
