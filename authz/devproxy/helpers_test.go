package devproxy_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/devproxy"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
)

// policyJSON is example-service's policy, and two roles more: "numbers"
// reaches only items whose id is a number, "bulk" the routes /r/N.
const policyJSON = `[
  {"role": "viewer", "accessPolicies": [
    {"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]},
  {"role": "editor", "accessPolicies": [
    {"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET", "POST", "PUT"], "effect": "allow"}]},
  {"role": "admin", "accessPolicies": [
    {"path": "^/catalog/api/v1/items(/[^/]+)?$", "methods": ["GET", "POST", "PUT", "DELETE"], "effect": "allow"},
    {"path": "^/catalog/api/v1/items/locked$", "methods": ["DELETE"], "effect": "deny"}]},
  {"role": "numbers", "accessPolicies": [
    {"path": "^/catalog/api/v1/items/[0-9]+$", "methods": ["GET"], "effect": "allow"}]},
  {"role": "bulk", "accessPolicies": [
    {"path": "^/r/[0-9]+$", "methods": ["GET"], "effect": "allow"}]}
]`

// tokensJSON are the callers of the tests.
const tokensJSON = `[
  {"token": "demo-viewer", "subject": "viewer@demo", "roles": ["viewer"]},
  {"token": "demo-editor", "subject": "editor@demo", "roles": ["editor"]},
  {"token": "demo-admin", "subject": "admin@demo", "roles": ["admin"]},
  {"token": "num-token", "subject": "numbers@demo", "roles": ["numbers"]},
  {"token": "bulk-token", "subject": "bulk@demo", "roles": ["bulk"]},
  {"token": "nobody-token", "subject": "nobody@demo"}
]`

// allTokens are the tokens of tokensJSON, which no log or error may hold.
var allTokens = []string{"demo-viewer", "demo-editor", "demo-admin", "num-token", "bulk-token", "nobody-token"}

// proxy is a dev proxy on a real 127.0.0.1 server.
type proxy struct {
	url string
	log *syncbuf.Buffer
}

// start serves a Handler of policyJSON and tokensJSON with opts (its
// Logger replaced by one into the returned proxy's log).
func start(t *testing.T, opts devproxy.Options) *proxy {
	t.Helper()
	policy := authz.MustParsePolicy([]byte(policyJSON))
	tokens, err := tokenfile.Parse([]byte(tokensJSON), policy.Roles())
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{log: &syncbuf.Buffer{}}
	opts.Logger = slog.New(slog.NewTextHandler(p.log, nil))
	h, err := devproxy.New(policy, tokens, opts)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	p.url = srv.URL
	t.Cleanup(func() { noTokens(t, "the log", p.log.String()) })
	return p
}

// client is a ProxyAuth asking p.
func (p *proxy) client() *authz.ProxyAuth { return &authz.ProxyAuth{BaseURL: p.url} }

// noTokens fails if s holds a token of tokensJSON.
func noTokens(t *testing.T, what, s string) {
	t.Helper()
	for _, tok := range allTokens {
		if strings.Contains(s, tok) {
			t.Errorf("%s holds the token %q:\n%s", what, tok, s)
		}
	}
}

// response is what a raw request got.
type response struct {
	status int
	header http.Header
	body   string
}

// post sends a POST to url with headers (each key's values in order) and
// body, outside ProxyAuth, to see the wire.
func post(t *testing.T, url string, headers map[string][]string, body string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, vs := range headers {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{resp.StatusCode, resp.Header, string(data)}
}

// bearer is the headers of a request with token.
func bearer(token string, more ...string) map[string][]string {
	h := map[string][]string{"Authorization": {"Bearer " + token}}
	for i := 0; i+1 < len(more); i += 2 {
		h[more[i]] = append(h[more[i]], more[i+1])
	}
	return h
}
