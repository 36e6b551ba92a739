package authz_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// counting is an Authorizer that counts what it is asked, deciding by an
// inner one.
type counting struct {
	authz.Authorizer
	allow, many, routes atomic.Int64
}

func (c *counting) Allow(ctx context.Context, caller authz.Caller, r tool.Route) error {
	c.allow.Add(1)
	c.routes.Add(1)
	return c.Authorizer.Allow(ctx, caller, r)
}

func (c *counting) AllowMany(ctx context.Context, caller authz.Caller, rs []tool.Route) ([]bool, error) {
	c.many.Add(1)
	c.routes.Add(int64(len(rs)))
	return c.Authorizer.AllowMany(ctx, caller, rs)
}

var (
	viewer   = authz.Caller{Subject: "v", Roles: []string{"viewer"}, Bearer: secretBearer}
	items    = catalog("GET", "/api/v1/items")
	item42   = catalog("GET", "/api/v1/items/42")
	create   = catalog("POST", "/api/v1/items")
	reports  = catalog("GET", "/api/v1/reports")
	ctxBgnd  = context.Background()
	ttl      = time.Minute
	viewerOK = map[tool.Route]bool{items: true, item42: true, create: false, reports: false}
)

func TestCachedTTL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		inner := &counting{Authorizer: testPolicy(t)}
		a := authz.Cached(inner, ttl, 100)
		check := func(wantRoutes int64) {
			t.Helper()
			if err := a.Allow(ctxBgnd, viewer, items); err != nil {
				t.Fatal(err)
			}
			if err := a.Allow(ctxBgnd, viewer, create); errKind(err) != "deny" {
				t.Fatalf("cached Allow(create) = %v", err)
			}
			got, err := a.AllowMany(ctxBgnd, viewer, []tool.Route{items, reports})
			if err != nil || !cmp.Equal(got, []bool{true, false}) {
				t.Fatalf("AllowMany = %v, %v", got, err)
			}
			if n := inner.routes.Load(); n != wantRoutes {
				t.Fatalf("inner authorizer asked about %d routes, want %d", n, wantRoutes)
			}
		}
		check(3) // items, create, reports
		check(3) // all cached
		time.Sleep(ttl - time.Nanosecond)
		check(3) // still fresh
		time.Sleep(time.Nanosecond)
		check(6) // expired: asked again
		check(6)
	})
}

func TestCachedBound(t *testing.T) {
	inner := &counting{Authorizer: testPolicy(t)}
	a := authz.Cached(inner, time.Hour, 2)
	ask := func(r tool.Route) {
		t.Helper()
		if got := a.Allow(ctxBgnd, viewer, r) == nil; got != viewerOK[r] {
			t.Fatalf("Allow(%s) = %v", r, got)
		}
	}
	steps := []struct {
		route tool.Route
		want  int64 // inner calls so far
	}{
		{items, 1}, {create, 2}, // cache: create, items
		{items, 2},   // hit; cache: items, create
		{reports, 3}, // evicts create (least recently used); cache: reports, items
		{items, 3},   // hit
		{create, 4},  // evicted before: asked again; evicts reports
		{reports, 5}, // evicted: asked again
	}
	for i, s := range steps {
		ask(s.route)
		if n := inner.allow.Load(); n != s.want {
			t.Fatalf("step %d (%s): inner asked %d times, want %d", i, s.route, n, s.want)
		}
	}
	// A batch larger than the bound still answers every route.
	got, err := a.AllowMany(ctxBgnd, viewer, []tool.Route{items, create, item42, reports, items})
	if err != nil || !cmp.Equal(got, []bool{true, false, true, false, true}) {
		t.Errorf("AllowMany over the bound = %v, %v", got, err)
	}
}

func TestCachedNeverCachesOutageOrUnauthenticated(t *testing.T) {
	proxy := newRBACProxy(t, testPolicy(t), testRoles)
	a := authz.Cached(proxy.auth(), time.Hour, 100)
	stranger := authz.Caller{Subject: "x", Bearer: "unknown-to-the-proxy"}
	proxy.status.Store(500)
	for range 2 {
		if err := a.Allow(ctxBgnd, viewer, items); errKind(err) != "outage" {
			t.Fatalf("Allow during an outage = %v", err)
		}
		if _, err := a.AllowMany(ctxBgnd, viewer, []tool.Route{items}); errKind(err) != "outage" {
			t.Fatalf("AllowMany during an outage = %v", err)
		}
	}
	proxy.status.Store(0)
	for range 2 {
		if err := a.Allow(ctxBgnd, stranger, items); errKind(err) != "unauthenticated" {
			t.Fatalf("Allow(stranger) = %v", err)
		}
		if _, err := a.AllowMany(ctxBgnd, stranger, []tool.Route{items}); errKind(err) != "unauthenticated" {
			t.Fatalf("AllowMany(stranger) = %v", err)
		}
	}
	if s, b := proxy.single.Load(), proxy.batch.Load(); s != 4 || b != 4 {
		t.Errorf("proxy asked %d single, %d batch; want 4 and 4 (nothing cached)", s, b)
	}
	// Answers are cached, denials too; once the outage is over the real answer is.
	for range 3 {
		if err := a.Allow(ctxBgnd, viewer, items); err != nil {
			t.Fatal(err)
		}
		if err := a.Allow(ctxBgnd, viewer, create); errKind(err) != "deny" {
			t.Fatal(err)
		}
	}
	if s := proxy.single.Load(); s != 6 {
		t.Errorf("proxy asked %d single decisions, want 6", s)
	}
}

func TestCachedKeysByCredential(t *testing.T) {
	inner := &counting{Authorizer: testPolicy(t)}
	a := authz.Cached(inner, time.Hour, 100)
	editor := authz.Caller{Subject: "v", Roles: []string{"editor"}, Bearer: secretBearer} // same subject and bearer
	other := authz.Caller{Subject: "v", Roles: []string{"viewer"}, Bearer: otherBearer}
	split := authz.Caller{Subject: "v", Roles: []string{"view", "er"}, Bearer: secretBearer}
	for range 2 {
		for _, tt := range []struct {
			c    authz.Caller
			r    tool.Route
			want bool
		}{
			{viewer, items, true}, {editor, items, false}, {other, items, true}, {split, items, false},
			{viewer, create, false}, {editor, create, true},
		} {
			if got := a.Allow(ctxBgnd, tt.c, tt.r) == nil; got != tt.want {
				t.Errorf("Allow(%v, %s) = %v, want %v", tt.c, tt.r, got, tt.want)
			}
		}
	}
	if n := inner.allow.Load(); n != 6 {
		t.Errorf("inner asked %d times, want 6 (each caller and route once)", n)
	}
}

func TestCachedAllowManyDeduplicatesMisses(t *testing.T) {
	inner := &counting{Authorizer: testPolicy(t)}
	a := authz.Cached(inner, time.Hour, 100)
	if err := a.Allow(ctxBgnd, viewer, items); err != nil {
		t.Fatal(err)
	}
	got, err := a.AllowMany(ctxBgnd, viewer, []tool.Route{create, items, item42, create, item42})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{false, true, true, false, true}, got); diff != "" {
		t.Errorf("AllowMany (-want +got):\n%s", diff)
	}
	if n := inner.routes.Load(); n != 3 {
		t.Errorf("inner asked about %d routes, want 3 (items cached; create and item42 once)", n)
	}
}

func TestCachedPanics(t *testing.T) {
	tests := []struct {
		name string
		f    func()
		want string
	}{
		{"nil", func() { authz.Cached(nil, time.Second, 1) }, "authz: Cached: nil Authorizer"},
		{"ttl", func() { authz.Cached(authz.AllowAll(), 0, 1) }, "authz: Cached: ttl is 0s, want a positive duration"},
		{"max", func() { authz.Cached(authz.AllowAll(), time.Second, 0) }, "authz: Cached: max is 0, want at least 1"},
	}
	for _, tt := range tests {
		if got := panicValue(tt.f); got != tt.want {
			t.Errorf("%s: panic %v, want %q", tt.name, got, tt.want)
		}
	}
}

// TestCachedConcurrent hammers a small cache (constant eviction) from many
// goroutines; every answer must be the inner policy's. Run with -race.
func TestCachedConcurrent(t *testing.T) {
	p := testPolicy(t)
	a := authz.Cached(p, time.Hour, 16)
	roles := [][]string{{"viewer"}, {"editor"}, {"reporter"}, {"nobody"}, {"viewer", "editor"}}
	var routes []tool.Route
	for i := range 10 {
		routes = append(routes, catalog("GET", fmt.Sprintf("/api/v1/items/%d", i)))
	}
	routes = append(routes, items, create, reports, catalog("DELETE", "/api/v1/items/1"), catalog("GET", "/api/v1/items/forbidden"))
	var wg sync.WaitGroup
	errs := make(chan string, 100)
	for g := range 8 {
		wg.Go(func() {
			for i := range 300 {
				c := authz.Caller{Subject: fmt.Sprint(g), Roles: roles[(g+i)%len(roles)], Bearer: fmt.Sprint("b", i%3)}
				r := routes[(g*7+i)%len(routes)]
				want := p.Allow(ctxBgnd, c, r) == nil
				if got := a.Allow(ctxBgnd, c, r) == nil; got != want {
					errs <- fmt.Sprintf("Allow(%v, %s) = %v, want %v", c, r, got, want)
					return
				}
				batch := []tool.Route{r, routes[i%len(routes)], r}
				wantMany, _ := p.AllowMany(ctxBgnd, c, batch)
				if got, err := a.AllowMany(ctxBgnd, c, batch); err != nil || !cmp.Equal(got, wantMany) {
					errs <- fmt.Sprintf("AllowMany(%v, %v) = %v, %v, want %v", c, batch, got, err, wantMany)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestCachedForwardsReady: a cache in front of a ReadyChecker is as ready
// as it; in front of an authorizer without one, always ready.
func TestCachedForwardsReady(t *testing.T) {
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there now
	proxy := &authz.ProxyAuth{BaseURL: down.URL}
	rc, ok := authz.Cached(proxy, time.Second, 10).(authz.ReadyChecker)
	if !ok {
		t.Fatal("Cached(proxy) is no ReadyChecker")
	}
	if err := rc.Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("Ready of a cache in front of an unreachable proxy = %v, want the proxy's error", err)
	}
	rc, ok = authz.Cached(testPolicy(t), time.Second, 10).(authz.ReadyChecker)
	if !ok || rc.Ready(context.Background()) != nil {
		t.Errorf("a cache in front of a policy is not ready")
	}
}
