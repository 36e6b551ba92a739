package catalog_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/example-service/catalog"
)

// recorder serves the catalog and records every request it receives as
// "METHOD escaped-path".
type recorder struct {
	mu   sync.Mutex
	seen []string
	h    http.Handler
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.seen = append(r.seen, req.Method+" "+req.URL.EscapedPath())
	r.mu.Unlock()
	r.h.ServeHTTP(w, req)
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.seen...)
}

func newClient(t *testing.T) (*catalog.Client, *recorder) {
	t.Helper()
	rec := &recorder{h: catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...))}
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return &catalog.Client{BaseURL: srv.URL, HTTPClient: srv.Client()}, rec
}

func TestClientRoundTrip(t *testing.T) {
	c, rec := newClient(t)
	ctx := context.Background()

	created, err := c.Create(ctx, "Grinder", 2)
	if err != nil {
		t.Fatal(err)
	}
	if created.ID == "" || created.Name != "Grinder" || created.Quantity != 2 {
		t.Fatalf("Create = %+v", created)
	}
	got, err := c.Get(ctx, created.ID)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(created, got); diff != "" {
		t.Errorf("Get mismatch (-want +got):\n%s", diff)
	}
	updated, err := c.Update(ctx, created.ID, "Grinder, burr", 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := (catalog.Item{ID: created.ID, Name: "Grinder, burr", Quantity: 3}); updated != want {
		t.Errorf("Update = %+v, want %+v", updated, want)
	}
	items, err := c.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 4 {
		t.Errorf("List returned %d items, want 4: %+v", len(items), items)
	}
	if err := c.Delete(ctx, created.ID); err != nil {
		t.Fatal(err)
	}
	var nf *catalog.NotFoundError
	if _, err := c.Get(ctx, created.ID); !errors.As(err, &nf) || nf.ID != created.ID {
		t.Errorf("Get after Delete: error %v, want a NotFoundError for %q", err, created.ID)
	}
	if err := c.Delete(ctx, created.ID); !errors.As(err, &nf) {
		t.Errorf("second Delete: error %v, want a NotFoundError", err)
	}
	if _, err := c.Update(ctx, created.ID, "x", 1); !errors.As(err, &nf) {
		t.Errorf("Update after Delete: error %v, want a NotFoundError", err)
	}
	want := []string{
		"POST /api/v1/items",
		"GET /api/v1/items/" + created.ID,
		"PUT /api/v1/items/" + created.ID,
		"GET /api/v1/items",
		"DELETE /api/v1/items/" + created.ID,
		"GET /api/v1/items/" + created.ID,
		"DELETE /api/v1/items/" + created.ID,
		"PUT /api/v1/items/" + created.ID,
	}
	if diff := cmp.Diff(want, rec.requests()); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
}

// TestClientIDsStayInTheirSegment: whatever the id, the client sends it as
// exactly one escaped segment of the item route, or nothing at all (an
// id holding a separator, which an upstream decoding %2F would split).
func TestClientIDsStayInTheirSegment(t *testing.T) {
	tests := []struct {
		id       string
		wantPath string // "" = refused before sending
	}{
		{"itm-1", "/api/v1/items/itm-1"},
		{"x?y=1#z", "/api/v1/items/x%3Fy=1%23z"},
		{"a b", "/api/v1/items/a%20b"},
		{"..", ""},
		{".", ""},
		{"", ""},
		{"a\nb", ""},
		{"a/b", ""},
		{"../../admin", ""},
		{`..\admin`, ""},
		{"%2e%2e", ""},
		{"..%252Fadmin", ""},
		{"..;x", ""},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			c, rec := newClient(t)
			_, err := c.Get(context.Background(), tt.id)
			got := rec.requests()
			if tt.wantPath == "" {
				var bad *catalog.InvalidIDError
				if !errors.As(err, &bad) || bad.ID != tt.id || len(got) != 0 {
					t.Errorf("Get(%q): error %v, sent %q; want an InvalidIDError before sending", tt.id, err, got)
				}
				return
			}
			if diff := cmp.Diff([]string{"GET " + tt.wantPath}, got); diff != "" {
				t.Errorf("requests mismatch (-want +got):\n%s", diff)
			}
			// Every id here but the seeded one is unknown to the store: the
			// request reached the item route, not another resource.
			var nf *catalog.NotFoundError
			if tt.id != "itm-1" && (!errors.As(err, &nf) || nf.ID != tt.id) {
				t.Errorf("Get(%q): error %v, want a NotFoundError for the same id", tt.id, err)
			}
		})
	}
}

func TestClientErrors(t *testing.T) {
	c, _ := newClient(t)
	ctx := context.Background()

	var ae *catalog.APIError
	_, err := c.Create(ctx, "", 1)
	if !errors.As(err, &ae) || ae.Status != 400 || ae.Code != catalog.CodeInvalidRequest || ae.Message != "name is required" {
		t.Errorf("Create with an empty name: error %#v, want a 400 invalid_request APIError", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.List(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: error %v, want context.Canceled", err)
	}

	// A transport's own error reaches the caller unwrapped from url.Error,
	// so the upstream's address stays out of the message.
	denied := errors.New("not authorized (insufficient_scope)")
	c2 := &catalog.Client{BaseURL: "http://127.0.0.1:1", HTTPClient: &http.Client{Transport: failing{denied}}}
	_, err = c2.List(ctx)
	if !errors.Is(err, denied) || strings.Contains(err.Error(), "127.0.0.1") {
		t.Errorf("List through a refusing transport: error %v, want %v without the address", err, denied)
	}

	// A non-catalog error body still gives an APIError.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "bad gateway", http.StatusBadGateway)
	}))
	defer srv.Close()
	c3 := &catalog.Client{BaseURL: srv.URL}
	if _, err := c3.Get(ctx, "itm-1"); !errors.As(err, &ae) || ae.Status != 502 || ae.Code != "" {
		t.Errorf("Get from a failing upstream: error %#v, want a 502 APIError", err)
	}
}

type failing struct{ err error }

func (f failing) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

func TestCheckBaseURL(t *testing.T) {
	tests := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8081", true},
		{"https://catalog.internal/", true},
		{"http://catalog.internal/prefix", false},
		{"ftp://catalog.internal", false},
		{"http://", false},
		{"http://host?x=1", false},
		{"http://user:pw@host", false},
		{"127.0.0.1:8081", false},
	}
	for _, tt := range tests {
		u, err := url.Parse(tt.url)
		if err == nil {
			err = catalog.CheckBaseURL(u)
		}
		if (err == nil) != tt.ok {
			t.Errorf("CheckBaseURL(%q) = %v, want ok: %v", tt.url, err, tt.ok)
		}
		c := &catalog.Client{BaseURL: tt.url}
		if _, err := c.List(context.Background()); tt.ok == false && (err == nil || !strings.HasPrefix(err.Error(), "catalog: base URL") && !strings.HasPrefix(err.Error(), "catalog: BaseURL")) {
			t.Errorf("List with BaseURL %q: error %v, want a base URL error", tt.url, err)
		}
	}
}

func TestStoreConcurrent(t *testing.T) {
	s := catalog.NewStore()
	var wg sync.WaitGroup
	ids := make(chan string, 100)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				it := s.Create("x", 1)
				s.Update(it.ID, "y", 2)
				s.List()
				ids <- it.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("duplicate id %q", id)
		}
		seen[id] = true
		if it, ok := s.Get(id); !ok || it.Name != "y" {
			t.Errorf("Get(%q) = %+v, %v", id, it, ok)
		}
	}
	if n := len(s.List()); n != 100 {
		t.Errorf("List has %d items, want 100", n)
	}
}

func TestNewTransport(t *testing.T) {
	tr := catalog.NewTransport()
	if tr == http.DefaultTransport {
		t.Fatal("NewTransport returned http.DefaultTransport itself")
	}
	def := http.DefaultTransport.(*http.Transport)
	got := map[string]any{
		"MaxConnsPerHost": tr.MaxConnsPerHost, "MaxIdleConnsPerHost": tr.MaxIdleConnsPerHost, "MaxIdleConns": tr.MaxIdleConns,
		"IdleConnTimeout": tr.IdleConnTimeout, "TLSHandshakeTimeout": tr.TLSHandshakeTimeout, "ForceAttemptHTTP2": tr.ForceAttemptHTTP2,
		"Proxy": tr.Proxy != nil,
	}
	want := map[string]any{
		"MaxConnsPerHost": catalog.MaxConns, "MaxIdleConnsPerHost": catalog.MaxConns, "MaxIdleConns": catalog.MaxConns,
		"IdleConnTimeout": def.IdleConnTimeout, "TLSHandshakeTimeout": def.TLSHandshakeTimeout, "ForceAttemptHTTP2": true,
		"Proxy": true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("NewTransport (-want +got):\n%s", diff)
	}
	if catalog.MaxConns < 200 {
		t.Errorf("MaxConns = %d: fewer than the 200 concurrent calls example-service was loaded with", catalog.MaxConns)
	}
}
