package authz_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/authz"
)

// TestProxyAuthReady: a proxy that refuses a request without a
// credential is ready; one that allows it, fails, or cannot be reached is
// not, and the error names it and the cause. The probe carries no
// credential.
func TestProxyAuthReady(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string // "" : ready
	}{
		{http.StatusUnauthorized, ""},
		{http.StatusForbidden, ""},
		{http.StatusNoContent, "allows a request without a credential"},
		{http.StatusOK, "allows a request without a credential"},
		{http.StatusBadGateway, "answered 502 Bad Gateway"},
		{http.StatusNotFound, "answered 404 Not Found"},
	} {
		var sawAuth, sawPath string
		proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			sawAuth, sawPath = r.Header.Get("Authorization"), r.URL.Path
			w.WriteHeader(c.status)
		}))
		err := (&authz.ProxyAuth{BaseURL: proxy.URL}).Ready(context.Background())
		proxy.Close()
		switch {
		case c.want == "" && err != nil:
			t.Errorf("proxy answering %d: Ready = %v, want nil", c.status, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), proxy.URL)):
			t.Errorf("proxy answering %d: Ready = %v, want an error naming %s and saying %q", c.status, err, proxy.URL, c.want)
		}
		if sawAuth != "" || sawPath != "/api/v3/auth" {
			t.Errorf("probe: Authorization %q, path %q; want none, %s", sawAuth, sawPath, "/api/v3/auth")
		}
	}
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	if err := (&authz.ProxyAuth{BaseURL: gone.URL}).Ready(context.Background()); err == nil || !strings.Contains(err.Error(), "unreachable") {
		t.Errorf("unreachable proxy: Ready = %v, want an error saying unreachable", err)
	}
}
