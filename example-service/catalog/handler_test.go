package catalog_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/example-service/catalog"
)

func TestHandler(t *testing.T) {
	type want struct {
		status int
		header map[string]string // a subset of the response headers
		body   string            // exact JSON, compared structurally; "" = empty body
	}
	tests := []struct {
		name         string
		method, path string
		ctype, body  string
		want         want
	}{
		{"list", "GET", "/api/v1/items", "", "", want{200, nil,
			`{"items":[{"id":"itm-1","name":"Espresso beans, 1 kg","quantity":12},{"id":"itm-2","name":"Milk jug","quantity":4},{"id":"itm-3","name":"Paper filters (100)","quantity":0}]}`}},
		{"get", "GET", "/api/v1/items/itm-2", "", "", want{200, nil, `{"id":"itm-2","name":"Milk jug","quantity":4}`}},
		{"get missing", "GET", "/api/v1/items/nope", "", "", want{404, nil, `{"error":{"code":"not_found","message":"item \"nope\" not found"}}`}},
		{"get escaped slash", "GET", "/api/v1/items/itm-1%2F..", "", "", want{404, nil, `{"error":{"code":"not_found","message":"item \"itm-1/..\" not found"}}`}},
		{"update", "PUT", "/api/v1/items/itm-2", "application/json", `{"name":"Milk jug, steel","quantity":5}`,
			want{200, nil, `{"id":"itm-2","name":"Milk jug, steel","quantity":5}`}},
		{"update with charset", "PUT", "/api/v1/items/itm-2", "application/json; charset=utf-8", `{"name":"x","quantity":0}`,
			want{200, nil, `{"id":"itm-2","name":"x","quantity":0}`}},
		{"update missing", "PUT", "/api/v1/items/nope", "application/json", `{"name":"x","quantity":1}`,
			want{404, nil, `{"error":{"code":"not_found","message":"item \"nope\" not found"}}`}},
		{"update invalid", "PUT", "/api/v1/items/itm-2", "application/json", `{"name":" ","quantity":-1}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"name is required\nquantity must be between 0 and 1000000"}}`}},
		{"delete", "DELETE", "/api/v1/items/itm-3", "", "", want{204, nil, ""}},
		{"delete missing", "DELETE", "/api/v1/items/nope", "", "", want{404, nil, `{"error":{"code":"not_found","message":"item \"nope\" not found"}}`}},
		{"create without quantity", "POST", "/api/v1/items", "application/json", `{"name":"x"}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"quantity is required"}}`}},
		{"create quantity too large", "POST", "/api/v1/items", "application/json", `{"name":"x","quantity":1000001}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"quantity must be between 0 and 1000000"}}`}},
		{"create name too long", "POST", "/api/v1/items", "application/json", `{"name":"` + strings.Repeat("x", 201) + `","quantity":1}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"name is 201 bytes long, at most 200 allowed"}}`}},
		{"create control character", "POST", "/api/v1/items", "application/json", `{"name":"a\u0007b","quantity":1}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"name must not contain control characters"}}`}},
		{"create unknown field", "POST", "/api/v1/items", "application/json", `{"name":"x","quantity":1,"id":"mine"}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"malformed JSON body: json: unknown field \"id\""}}`}},
		{"create trailing data", "POST", "/api/v1/items", "application/json", `{"name":"x","quantity":1}{}`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"malformed JSON body: unexpected data after the JSON object"}}`}},
		{"create not JSON", "POST", "/api/v1/items", "application/json", `name=x`,
			want{400, nil, `{"error":{"code":"invalid_request","message":"malformed JSON body: invalid character 'a' in literal null (expecting 'u')"}}`}},
		{"create wrong type", "POST", "/api/v1/items", "text/plain", `{"name":"x","quantity":1}`,
			want{415, nil, `{"error":{"code":"unsupported_media_type","message":"the body must be application/json"}}`}},
		{"create too large", "POST", "/api/v1/items", "application/json", `{"name":"` + strings.Repeat("x", catalog.MaxBodyBytes) + `","quantity":1}`,
			want{413, nil, `{"error":{"code":"too_large","message":"the body exceeds 65536 bytes"}}`}},
		{"method not allowed on the collection", "DELETE", "/api/v1/items", "", "",
			want{405, map[string]string{"Allow": "GET, HEAD, POST"}, `{"error":{"code":"method_not_allowed","message":"method DELETE not allowed (allowed: GET, HEAD, POST)"}}`}},
		{"method not allowed on an item", "PATCH", "/api/v1/items/itm-1", "", "",
			want{405, map[string]string{"Allow": "GET, HEAD, PUT, DELETE"}, `{"error":{"code":"method_not_allowed","message":"method PATCH not allowed (allowed: GET, HEAD, PUT, DELETE)"}}`}},
		{"unknown path", "GET", "/api/v2/items", "", "", want{404, nil, `{"error":{"code":"not_found","message":"no such resource"}}`}},
		{"nested path", "GET", "/api/v1/items/itm-1/parts", "", "", want{404, nil, `{"error":{"code":"not_found","message":"no such resource"}}`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
			defer srv.Close()
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.ctype != "" {
				req.Header.Set("Content-Type", tt.ctype)
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tt.want.status {
				t.Errorf("status = %d, want %d (body %s)", resp.StatusCode, tt.want.status, body)
			}
			for k, v := range tt.want.header {
				if got := resp.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if tt.want.body == "" {
				if len(body) != 0 {
					t.Errorf("body = %s, want none", body)
				}
				return
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			var got, want any
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("body %s: %v", body, err)
			}
			if err := json.Unmarshal([]byte(tt.want.body), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHandlerCreate(t *testing.T) {
	store := catalog.NewStore()
	srv := httptest.NewServer(catalog.NewHandler(store))
	defer srv.Close()
	resp, err := srv.Client().Post(srv.URL+"/api/v1/items", "application/json", strings.NewReader(`{"name":"Grinder","quantity":2}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("status = %d, want 201", resp.StatusCode)
	}
	var it catalog.Item
	if err := json.NewDecoder(resp.Body).Decode(&it); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(it.ID, "itm-") || it.Name != "Grinder" || it.Quantity != 2 {
		t.Errorf("created %+v, want a new itm- id, Grinder, 2", it)
	}
	if got, want := resp.Header.Get("Location"), "/api/v1/items/"+it.ID; got != want {
		t.Errorf("Location = %q, want %q", got, want)
	}
	if diff := cmp.Diff([]catalog.Item{it}, store.List()); diff != "" {
		t.Errorf("store mismatch (-want +got):\n%s", diff)
	}
}

func TestRoutesArePatterns(t *testing.T) {
	// Every declared route is served by the handler: none answers 404 or
	// 405 for a well-formed request.
	srv := httptest.NewServer(catalog.NewHandler(catalog.NewStore(catalog.DemoItems()...)))
	defer srv.Close()
	for _, r := range catalog.Routes() {
		if err := r.Validate(); err != nil {
			t.Errorf("route %s: %v", r, err)
		}
		b, err := r.Bind(bindAll(r, "itm-1"))
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(r.Method, srv.URL+b.ServicePath(), strings.NewReader(`{"name":"x","quantity":1}`))
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Errorf("%s: status %d", r, resp.StatusCode)
		}
	}
}

func bindAll(r interface{ Placeholders() []string }, v string) map[string]string {
	m := map[string]string{}
	for _, p := range r.Placeholders() {
		m[p] = v
	}
	return m
}
