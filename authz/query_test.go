package authz_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/toolroute/toolroute/authz"
)

// TestTransportQuery: a raw query goes into the request line as it is,
// so the transport sends only well-formed RFC 3986 queries; anything else
// ("?a HTTP/1.0 x" would end the request target early) is refused and
// reaches no upstream.
func TestTransportQuery(t *testing.T) {
	var mu sync.Mutex
	var received []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		received = append(received, r.RequestURI)
		mu.Unlock()
	}))
	t.Cleanup(up.Close)
	client := &http.Client{Transport: authz.Transport(up.Client().Transport, "catalog", up.URL, authz.AllowAll(), authz.Options{})}
	declared := catalog("GET", "/api/v1/items/{id}")
	send := func(rawQuery string) error {
		req, err := http.NewRequestWithContext(callCtx(alice, declared), "GET", up.URL+"/api/v1/items/0", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.RawQuery = rawQuery
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		return err
	}
	encoded := url.Values{"q": {"a b/c?d#e%f é \x00"}, "n": {"1"}}.Encode()
	for _, q := range []string{"", "a=1&b=2", "x=/?:@!$'()*+,;=-._~", "a=%20%2F%C3%A9", encoded} {
		mu.Lock()
		received = nil
		mu.Unlock()
		if err := send(q); err != nil {
			t.Errorf("query %q: %v", q, err)
			continue
		}
		mu.Lock()
		want := "/api/v1/items/0"
		if q != "" {
			want += "?" + q
		}
		if len(received) != 1 || received[0] != want {
			t.Errorf("query %q: the upstream received %q, want %q", q, received, want)
		}
		mu.Unlock()
	}
	mu.Lock()
	received = nil
	mu.Unlock()
	for _, q := range []string{"a HTTP/1.0 x", " ", "a\tb", "a\r\nHost: evil", "a\x00", "é", "a=%zz", "a=%4", "a=%", "a#b", "a=<script>", `a="b"`, "a|b", "a\\b", "a^b", "a`b", "a{b}", "a[0]=1"} {
		err := send(q)
		var denied *authz.DeniedError
		if !errors.As(err, &denied) {
			t.Errorf("query %q: %v, want a *DeniedError", q, err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(received) != 0 {
		t.Errorf("malformed queries reached the upstream as %q", received)
	}
}
