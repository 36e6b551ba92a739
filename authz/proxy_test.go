package authz_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
)

// scripted is a real HTTP server answering every request with handler,
// counting requests and recording the last one.
type scripted struct {
	*httptest.Server
	hits    atomic.Int64
	last    atomic.Pointer[http.Request]
	lastBig atomic.Pointer[[]byte]
}

func newScripted(t *testing.T, handler http.HandlerFunc) *scripted {
	t.Helper()
	s := &scripted{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		body, _ := io.ReadAll(r.Body)
		s.lastBig.Store(&body)
		s.last.Store(r.Clone(context.Background()))
		handler(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code) }
}

func body(code int, b string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(code); io.WriteString(w, b) }
}

// hang answers only when the request's context ends.
func hang(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

func errKind(err error) string {
	var d *authz.DeniedError
	var u *authz.UnauthenticatedError
	var o *authz.OutageError
	switch {
	case err == nil:
		return "allow"
	case errors.As(err, &d):
		return "deny"
	case errors.As(err, &u):
		return "unauthenticated"
	case errors.As(err, &o):
		return "outage"
	}
	return "other: " + err.Error()
}

func TestProxyAuthAllowStatusMapping(t *testing.T) {
	route := catalog("GET", "/api/v1/items/42")
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    string
	}{
		{"204", status(204), 0, "allow"},
		{"200", body(200, "anything"), 0, "allow"},
		{"403", status(403), 0, "deny"},
		{"401", status(401), 0, "unauthenticated"},
		{"500", status(500), 0, "outage"},
		{"502", status(502), 0, "outage"},
		{"404", status(404), 0, "outage"},
		{"201", status(201), 0, "outage"},
		{"302 to an allowing page", func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/login" {
				w.WriteHeader(204)
				return
			}
			http.Redirect(w, r, "/login", http.StatusFound)
		}, 0, "outage"},
		{"timeout", hang, 50 * time.Millisecond, "outage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted(t, tt.handler)
			p := &authz.ProxyAuth{BaseURL: s.URL, Timeout: tt.timeout}
			err := p.Allow(context.Background(), *alice, route)
			if got := errKind(err); got != tt.want {
				t.Fatalf("got %s (%v), want %s", got, err, tt.want)
			}
			if n := s.hits.Load(); n != 1 {
				t.Errorf("%d requests, want 1 (redirects are not followed)", n)
			}
			req := s.last.Load()
			got := map[string]string{
				"method":             req.Method,
				"path":               req.URL.Path,
				"Authorization":      req.Header.Get("Authorization"),
				"X-Forwarded-Uri":    req.Header.Get("X-Forwarded-Uri"),
				"X-Forwarded-Method": req.Header.Get("X-Forwarded-Method"),
			}
			want := map[string]string{
				"method":             "POST",
				"path":               "/api/v3/auth",
				"Authorization":      "Bearer " + secretBearer,
				"X-Forwarded-Uri":    "/catalog/api/v1/items/42",
				"X-Forwarded-Method": "GET",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("request to the proxy (-want +got):\n%s", diff)
			}
			if tt.name == "timeout" && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("timeout: %v does not unwrap to context.DeadlineExceeded", err)
			}
		})
	}
}

func TestProxyAuthHonoursContextDeadline(t *testing.T) {
	s := newScripted(t, hang)
	p := &authz.ProxyAuth{BaseURL: s.URL} // default timeout: 5 s
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := p.Allow(ctx, *alice, catalog("GET", "/api/v1/items"))
	if errKind(err) != "outage" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Allow = %v, want an outage unwrapping to DeadlineExceeded", err)
	}
	_, err = p.AllowMany(ctx, *alice, []tool.Route{catalog("GET", "/api/v1/items")})
	if errKind(err) != "outage" || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("AllowMany = %v, want an outage unwrapping to DeadlineExceeded", err)
	}
}

func TestProxyAuthAllowManyStatusMapping(t *testing.T) {
	a, b := catalog("GET", "/api/v1/items"), catalog("POST", "/api/v1/items")
	routes := []tool.Route{a, b}
	ok := `[{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false},
	        {"path": "/catalog/api/v1/items", "method": "GET", "authResult": true}]`
	tests := []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		want    string
		results []bool
	}{
		{"200", body(200, ok), 0, "allow", []bool{true, false}},
		{"200 answering twice the same", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true},
			{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true},
			{"path": "/catalog/api/v1/items", "method": "POST", "authResult": true}]`), 0, "allow", []bool{true, true}},
		{"401", status(401), 0, "unauthenticated", nil},
		{"403 denies all", status(403), 0, "allow", []bool{false, false}},
		{"204", status(204), 0, "outage", nil},
		{"500", body(500, ok), 0, "outage", nil},
		{"302", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/login", http.StatusFound) }, 0, "outage", nil},
		{"garbage", body(200, "<html>login</html>"), 0, "outage", nil},
		{"object", body(200, `{"authResult": true}`), 0, "outage", nil},
		{"null", body(200, `null`), 0, "outage", nil},
		{"empty", body(200, ``), 0, "outage", nil},
		{"missing a route", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true}]`), 0, "outage", nil},
		{"unasked route", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true},
			{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false},
			{"path": "/catalog/api/v1/admin", "method": "GET", "authResult": true}]`), 0, "outage", nil},
		{"no authResult", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET"},
			{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false}]`), 0, "outage", nil},
		{"string authResult", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": "true"},
			{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false}]`), 0, "outage", nil},
		{"contradiction", body(200, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true},
			{"path": "/catalog/api/v1/items", "method": "GET", "authResult": false},
			{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false}]`), 0, "outage", nil},
		{"timeout", hang, 50 * time.Millisecond, "outage", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newScripted(t, tt.handler)
			p := &authz.ProxyAuth{BaseURL: s.URL + "/", Timeout: tt.timeout}
			got, err := p.AllowMany(context.Background(), *alice, routes)
			if k := errKind(err); k != tt.want {
				t.Fatalf("got %s (%v), want %s", k, err, tt.want)
			}
			if diff := cmp.Diff(tt.results, got); diff != "" {
				t.Errorf("results (-want +got):\n%s", diff)
			}
			req := s.last.Load()
			if req.Method != "POST" || req.URL.Path != "/api/v3/auth-routes" || req.Header.Get("Authorization") != "Bearer "+secretBearer {
				t.Errorf("request %s %s, Authorization %q", req.Method, req.URL.Path, req.Header.Get("Authorization"))
			}
		})
	}
}

func TestProxyAuthBatchOrderAndDeduplication(t *testing.T) {
	a, b, c := catalog("GET", "/api/v1/items"), catalog("POST", "/api/v1/items"), catalog("GET", "/api/v1/items/{id}")
	// The proxy answers in its own order; results follow the question's.
	s := newScripted(t, body(200, `[
		{"path": "/catalog/api/v1/items/{id}", "method": "GET", "authResult": true},
		{"path": "/catalog/api/v1/items", "method": "POST", "authResult": false},
		{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true}]`))
	p := &authz.ProxyAuth{BaseURL: s.URL}
	got, err := p.AllowMany(context.Background(), *alice, []tool.Route{b, a, b, c, a, b})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]bool{false, true, false, true, true, false}, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
	var asked []routeQuery
	if err := json.Unmarshal(*s.lastBig.Load(), &asked); err != nil {
		t.Fatal(err)
	}
	want := []routeQuery{
		{Path: "/catalog/api/v1/items", Method: "POST"},
		{Path: "/catalog/api/v1/items", Method: "GET"},
		{Path: "/catalog/api/v1/items/{id}", Method: "GET"},
	}
	if diff := cmp.Diff(want, asked); diff != "" {
		t.Errorf("batch body: distinct routes in first-seen order (-want +got):\n%s", diff)
	}
	if ct := s.last.Load().Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type = %q", ct)
	}
}

func TestProxyAuthWithoutBearerAsksNothing(t *testing.T) {
	s := newScripted(t, status(204))
	p := &authz.ProxyAuth{BaseURL: s.URL}
	for _, c := range []authz.Caller{{Subject: "alice", Roles: []string{"viewer"}}, {Subject: "alice", Bearer: "a\r\nX-Evil: 1"}} {
		if err := p.Allow(context.Background(), c, catalog("GET", "/api/v1/items")); errKind(err) != "unauthenticated" {
			t.Errorf("Allow(%v) = %v", c, err)
		}
		if _, err := p.AllowMany(context.Background(), c, []tool.Route{catalog("GET", "/api/v1/items")}); errKind(err) != "unauthenticated" {
			t.Errorf("AllowMany(%v) = %v", c, err)
		}
	}
	if n := s.hits.Load(); n != 0 {
		t.Errorf("the proxy was asked %d times", n)
	}
}

func TestProxyAuthConfiguration(t *testing.T) {
	s := newScripted(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/rbac/check-many" {
			io.WriteString(w, `[{"path": "/catalog/api/v1/items", "method": "GET", "authResult": true}]`)
		}
	})
	p := &authz.ProxyAuth{BaseURL: s.URL + "/rbac", AuthPath: "/check", RoutesPath: "/check-many", Client: s.Client()}
	if err := p.Allow(context.Background(), *alice, catalog("GET", "/api/v1/items")); err != nil {
		t.Fatal(err)
	}
	if got := s.last.Load().URL.Path; got != "/rbac/check" {
		t.Errorf("single decision sent to %q", got)
	}
	if got, err := p.AllowMany(context.Background(), *alice, nil); err != nil || len(got) != 0 || got == nil {
		t.Errorf("AllowMany(nil) = %v, %v; want an empty result", got, err)
	}
	if n := s.hits.Load(); n != 1 {
		t.Errorf("an empty batch was sent")
	}
	if _, err := p.AllowMany(context.Background(), *alice, []tool.Route{catalog("GET", "/api/v1/items")}); err != nil {
		t.Fatal(err)
	}
	if got := s.last.Load().URL.Path; got != "/rbac/check-many" {
		t.Errorf("batch sent to %q", got)
	}
	// No BaseURL: every decision is an outage.
	empty := &authz.ProxyAuth{}
	if err := empty.Allow(context.Background(), *alice, catalog("GET", "/api/v1/items")); errKind(err) != "outage" {
		t.Errorf("Allow without BaseURL = %v", err)
	}
}
