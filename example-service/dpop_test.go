package main

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/internal/testing/redistest"
)

// dpopClient is a client's DPoP key and the token bound to it.
type dpopClient struct {
	signer jose.Signer
	token  string
}

// newDPoPClient makes a key pair and a token of the provider for this
// service, with the roles of an editor, bound to the key. The provider
// (zitadel/oidc's op) issues no DPoP-bound tokens itself: the claims a
// DPoP-aware provider would issue (RFC 9449 §6.1) are signed with its
// real key, which the service verifies through its real key set.
func newDPoPClient(t *testing.T, op *oidctest.Provider) *dpopClient {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv}, (&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tp, _ := (&jose.JSONWebKey{Key: &priv.PublicKey}).Thumbprint(crypto.SHA256)
	now := time.Now().Unix()
	token := op.Sign(t, map[string]any{
		"iss": op.Issuer, "sub": "pat", "aud": oauthAudience, "iat": now, "exp": now + 300,
		"realm_access": map[string]any{"roles": []string{"editor"}},
		"cnf":          map[string]any{"jkt": base64.RawURLEncoding.EncodeToString(tp)},
	})
	return &dpopClient{signer: signer, token: token}
}

// proof is a new proof for a POST to the service's public URL.
func (c *dpopClient) proof(t *testing.T) string {
	t.Helper()
	ath := sha256.Sum256([]byte(c.token))
	payload, _ := json.Marshal(map[string]any{"htm": "POST", "htu": oauthPublic, "jti": rand.Text(), "iat": time.Now().Unix(), "ath": base64.RawURLEncoding.EncodeToString(ath[:])})
	jws, err := c.signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, _ := jws.CompactSerialize()
	return s
}

// list posts tools/list to url with authorization and proof ("" for none).
func list(t *testing.T, url, authorization, proof string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Authorization", authorization)
	if proof != "" {
		req.Header.Set("DPoP", proof)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// dpopError is the error of a response's DPoP challenge ("" if none).
func dpopError(t *testing.T, resp *http.Response) (string, bool) {
	t.Helper()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range chs {
		if c.Scheme == "dpop" {
			return c.Params["error"], true
		}
	}
	return "", false
}

// With -dpop and -redis, two replicas of the kit share the proofs they
// accepted: a proof accepted by one is refused by the other (and by
// itself). A token bound to a key is refused as a bearer token, and the
// metadata says which proof algorithms are accepted.
func TestDPoPReplicas(t *testing.T) {
	op, _ := startOIDC(t)
	rdb := redistest.Start(t)
	key := filepath.Join(t.TempDir(), "state.key")
	os.WriteFile(key, []byte("0123456789abcdef0123456789abcdef0123456789abcdef\n"), 0o600)
	args := []string{"-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-roles-claim", "realm_access.roles",
		"-public-url", oauthPublic, "-dpop", "-redis", rdb.URL(), "-state-key-file", key}
	a, stderr := start(t, args...)
	b, _ := start(t, args...)
	if !strings.Contains(stderr.String(), "DPoP-bound tokens with their proofs") {
		t.Errorf("the announcement does not tell of DPoP:\n%s", stderr)
	}
	c := newDPoPClient(t, op)

	p := c.proof(t)
	if resp := list(t, a, "DPoP "+c.token, p); resp.StatusCode != http.StatusOK {
		t.Fatalf("a fresh proof at replica a: %s", resp.Status)
	}
	for name, url := range map[string]string{"a": a, "b": b} {
		resp := list(t, url, "DPoP "+c.token, p)
		if code, _ := dpopError(t, resp); resp.StatusCode != http.StatusUnauthorized || code != "invalid_dpop_proof" {
			t.Errorf("the proof replayed at replica %s: %s, DPoP error %q; want 401 invalid_dpop_proof", name, resp.Status, code)
		}
	}
	if resp := list(t, b, "DPoP "+c.token, c.proof(t)); resp.StatusCode != http.StatusOK {
		t.Errorf("a fresh proof at replica b: %s", resp.Status)
	}
	resp := list(t, a, "Bearer "+c.token, "")
	if code, _ := dpopError(t, resp); resp.StatusCode != http.StatusUnauthorized || code != "invalid_token" {
		t.Errorf("the bound token as a bearer token: %s, DPoP error %q; want 401 invalid_token", resp.Status, code)
	}
	// While Redis is down no proof can be recorded: 503, never let in.
	rdb.Stop()
	resp = list(t, b, "DPoP "+c.token, c.proof(t))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a fresh proof while Redis is down: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	rdb.Restart()
	// Without a token: both challenges, so that a client learns of DPoP.
	resp = list(t, a, "", "")
	if _, ok := dpopError(t, resp); resp.StatusCode != http.StatusUnauthorized || !ok || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
		t.Errorf("no token: %s %q, want 401 with Bearer and DPoP challenges", resp.Status, resp.Header.Values("WWW-Authenticate"))
	}

	mresp, err := http.Get(strings.TrimSuffix(a, "/mcp") + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	defer mresp.Body.Close()
	var md oauthex.ProtectedResourceMetadata
	if err := json.NewDecoder(mresp.Body).Decode(&md); err != nil {
		t.Fatal(err)
	}
	if len(md.DPOPSigningAlgValuesSupported) == 0 || md.DPOPBoundAccessTokensRequired {
		t.Errorf("metadata: dpop_signing_alg_values_supported %v, dpop_bound_access_tokens_required %v; want the algorithms, false", md.DPOPSigningAlgValuesSupported, md.DPOPBoundAccessTokensRequired)
	}
}

// -dpop-required refuses a token bound to no key as a bearer token;
// -dpop with -introspect, -dpop-required alone and -step-up without
// -scope-policy do not start.
func TestDPoPFlags(t *testing.T) {
	op, _ := startOIDC(t)
	url, _ := start(t, "-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-public-url", oauthPublic, "-dpop", "-dpop-required")
	resp := list(t, url, "Bearer "+op.Token(t, "bob"), "")
	if code, _ := dpopError(t, resp); resp.StatusCode != http.StatusUnauthorized || code != "invalid_token" {
		t.Errorf("a bearer token with -dpop-required: %s, DPoP error %q; want 401 invalid_token", resp.Status, code)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-dpop-required"}, "-dpop-required needs -dpop"},
		{[]string{"-step-up"}, "-step-up needs -scope-policy"},
		{[]string{"-dpop", "-introspect", op.Issuer + "/oauth/introspect", "-introspect-client-id", "x", "-introspect-secret-file", "x"}, "-dpop works with JWT access tokens only, not with -introspect"},
	} {
		var stderr strings.Builder
		err := run(t.Context(), append([]string{"-addr", "127.0.0.1:0", "-oidc-issuer", op.Issuer, "-audience", oauthAudience, "-public-url", oauthPublic}, tc.args...), strings.NewReader(""), &strings.Builder{}, &stderr)
		if err == nil || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%q: %v, stderr %q; want %q", tc.args, err, stderr.String(), tc.want)
		}
	}
}
