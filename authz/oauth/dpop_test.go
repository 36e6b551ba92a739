package oauth_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-jose/go-jose/v4"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/internal/testing/mcptest"
	"github.com/toolroute/toolroute/internal/testing/oidctest"
	"github.com/toolroute/toolroute/server"
)

// dpopKey is a client's DPoP key pair.
type dpopKey struct {
	signer jose.Signer
	jkt    string // its JWK SHA-256 thumbprint
}

func newDPoPKey(t testing.TB) *dpopKey {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.ES256, Key: priv},
		(&jose.SignerOptions{EmbedJWK: true}).WithType("dpop+jwt"))
	if err != nil {
		t.Fatal(err)
	}
	tp, err := (&jose.JSONWebKey{Key: &priv.PublicKey}).Thumbprint(crypto.SHA256)
	if err != nil {
		t.Fatal(err)
	}
	return &dpopKey{signer: signer, jkt: base64.RawURLEncoding.EncodeToString(tp)}
}

// proofClaims are a proof's claims; zero fields are filled by proof.
type proofClaims struct {
	HTM, HTU, JTI, ATH string
	IAT                int64
}

// proof signs a DPoP proof for a request of method to url presenting
// token: a new jti, issued now, unless c says otherwise.
func (k *dpopKey) proof(t testing.TB, method, url, token string, c proofClaims) string {
	t.Helper()
	if c.HTM == "" {
		c.HTM = method
	}
	if c.HTU == "" {
		c.HTU = url
	}
	if c.JTI == "" {
		c.JTI = rand.Text()
	}
	if c.ATH == "" {
		sum := sha256.Sum256([]byte(token))
		c.ATH = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	if c.IAT == 0 {
		c.IAT = time.Now().Unix()
	}
	payload, _ := json.Marshal(map[string]any{"htm": c.HTM, "htu": c.HTU, "jti": c.JTI, "ath": c.ATH, "iat": c.IAT})
	jws, err := k.signer.Sign(payload)
	if err != nil {
		t.Fatal(err)
	}
	s, err := jws.CompactSerialize()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// boundToken is an access token for this resource with roles, bound to
// the key whose thumbprint is jkt ("" binds it to none), signed by the
// provider's key. The provider (zitadel/oidc v3.52's op) issues no
// DPoP-bound access tokens itself: it has no DPoP token endpoint, so the
// tests sign the claims a DPoP-aware provider would issue (RFC 9449 §6.1)
// with its real key, verified through its real key set.
func boundToken(t testing.TB, op *oidctest.Provider, sub, jkt string) string {
	t.Helper()
	now := time.Now().Unix()
	claims := map[string]any{"iss": op.Issuer, "sub": sub, "aud": resource, "iat": now, "exp": now + 300, "roles": []string{"editor"}}
	if jkt != "" {
		claims["cnf"] = map[string]any{"jkt": jkt}
	}
	return op.Sign(t, claims)
}

// dpopServer serves the test tools behind a DPoP check of opts (its
// Confirmation: v's), and returns the endpoint's URL.
func dpopServer(t testing.TB, v *oauth.JWTVerifier, opts oauth.DPoPOptions) string {
	t.Helper()
	opts.Confirmation = v.Confirmation
	d, err := oauth.NewDPoP(opts)
	if err != nil {
		t.Fatal(err)
	}
	return mcpServer(t, v.Verify, "http://127.0.0.1:1", nil, server.HTTPServerOptions{Endpoint: server.HTTPOptions{Wrap: d.Handler}})
}

const listBody = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`

// postDPoP posts tools/list with Authorization: DPoP token and proof
// ("" sends no DPoP header).
func postDPoP(t testing.TB, url, token, proof string) *http.Response {
	t.Helper()
	h := mcptest.Header("DPoP "+token, "2025-11-25")
	if proof != "" {
		h.Set("DPoP", proof)
	}
	return mcptest.Post(t, url, h, listBody)
}

// challenges returns a response's challenges by scheme.
func challenges(t testing.TB, resp *http.Response) map[string]map[string]string {
	t.Helper()
	chs, err := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	if err != nil {
		t.Fatalf("WWW-Authenticate %q: %v", resp.Header.Values("WWW-Authenticate"), err)
	}
	m := map[string]map[string]string{}
	for _, c := range chs {
		m[c.Scheme] = c.Params
	}
	return m
}

// checkDPoPRefusal wants a 401 whose DPoP challenge names code.
func checkDPoPRefusal(t *testing.T, resp *http.Response, code string) {
	t.Helper()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("status %s, want 401", resp.Status)
	}
	ch := challenges(t, resp)["dpop"]
	if ch == nil {
		t.Fatalf("no DPoP challenge in %q", resp.Header.Values("WWW-Authenticate"))
	}
	if ch["error"] != code || ch["algs"] == "" || !strings.Contains(ch["algs"], "ES256") {
		t.Errorf("DPoP challenge %v, want error=%q and algs naming ES256", ch, code)
	}
}

// A real go-sdk client whose every request carries a new proof, with a
// token bound to its key, is served: connect, list, call.
func TestDPoPClient(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := dpopServer(t, v, oauth.DPoPOptions{})
	key := newDPoPKey(t)
	token := boundToken(t, op, "pat", key.jkt)
	rt := &dpopTransport{t: t, key: key, token: token, base: http.DefaultTransport.(*http.Transport).Clone()}
	t.Cleanup(rt.base.CloseIdleConnections)
	client := mcp.NewClient(&mcp.Implementation{Name: "dpop-client", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: rt}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect with DPoP: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "whoami"})
	if err != nil || res.IsError {
		t.Fatalf("whoami: %v %v", err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(data), `"subject":"pat"`) {
		t.Errorf("whoami = %s, want subject pat", data)
	}
	if n := rt.sent.Load(); n < 2 {
		t.Errorf("%d requests with proofs, want at least 2 (connecting, the call), each with its own proof", n)
	}
}

// dpopTransport sends every request with the DPoP scheme and a new proof.
type dpopTransport struct {
	t     testing.TB
	key   *dpopKey
	token string
	base  *http.Transport
	sent  atomic.Int64
}

func (d *dpopTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	u := *r.URL
	u.RawQuery = ""
	r.Header.Set("Authorization", "DPoP "+d.token)
	r.Header.Set("DPoP", d.key.proof(d.t, r.Method, u.String(), d.token, proofClaims{}))
	d.sent.Add(1)
	return d.base.RoundTrip(r)
}

// stolenKey is a proof that names victim's public key in its "jwk" (so
// its thumbprint is the token's) but is signed by thief's.
func stolenKey(t *testing.T, victim, thief *dpopKey, url, token string) string {
	t.Helper()
	head, _, _ := strings.Cut(victim.proof(t, "POST", url, token, proofClaims{}), ".")
	parts := strings.Split(thief.proof(t, "POST", url, token, proofClaims{}), ".")
	return head + "." + parts[1] + "." + parts[2]
}

// Every way a proof or its presentation can be wrong is refused with 401
// and a DPoP challenge naming the error, before any tool runs.
func TestDPoPRefused(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := dpopServer(t, v, oauth.DPoPOptions{})
	key, other := newDPoPKey(t), newDPoPKey(t)
	token := boundToken(t, op, "pat", key.jkt)

	ok := func(resp *http.Response) {
		t.Helper()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status %s, want 200", resp.Status)
		}
	}
	ok(postDPoP(t, url, token, key.proof(t, "POST", url, token, proofClaims{})))

	for _, tc := range []struct {
		name  string
		proof string
		code  string
	}{
		{"another method", key.proof(t, "POST", url, token, proofClaims{HTM: "GET"}), "invalid_dpop_proof"},
		{"another URL", key.proof(t, "POST", url, token, proofClaims{HTU: strings.Replace(url, "/mcp", "/other", 1)}), "invalid_dpop_proof"},
		{"another host", key.proof(t, "POST", url, token, proofClaims{HTU: "https://tools.example.test/mcp"}), "invalid_dpop_proof"},
		{"stale iat", key.proof(t, "POST", url, token, proofClaims{IAT: time.Now().Add(-6 * time.Minute).Unix()}), "invalid_dpop_proof"},
		{"future iat", key.proof(t, "POST", url, token, proofClaims{IAT: time.Now().Add(6 * time.Minute).Unix()}), "invalid_dpop_proof"},
		{"another token's hash", key.proof(t, "POST", url, token, proofClaims{ATH: "AAAA"}), "invalid_dpop_proof"},
		{"another key", other.proof(t, "POST", url, token, proofClaims{}), "invalid_token"},
		{"signed by another key than its jwk", stolenKey(t, key, other, url, token), "invalid_dpop_proof"},
		{"no proof", "", "invalid_dpop_proof"},
		{"not a JWS", "not-a-proof", "invalid_dpop_proof"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkDPoPRefusal(t, postDPoP(t, url, token, tc.proof), tc.code)
		})
	}

	t.Run("replayed", func(t *testing.T) {
		p := key.proof(t, "POST", url, token, proofClaims{})
		ok(postDPoP(t, url, token, p))
		checkDPoPRefusal(t, postDPoP(t, url, token, p), "invalid_dpop_proof")
	})
	t.Run("bound token as bearer", func(t *testing.T) {
		checkDPoPRefusal(t, post(t, url, "Bearer "+token), "invalid_token")
	})
	t.Run("unbound token with DPoP", func(t *testing.T) {
		plain := boundToken(t, op, "pat", "")
		checkDPoPRefusal(t, postDPoP(t, url, plain, key.proof(t, "POST", url, plain, proofClaims{})), "invalid_token")
		ok(post(t, url, "Bearer "+plain)) // not Required: a plain token is a bearer token
	})
	t.Run("forged token with DPoP", func(t *testing.T) {
		// A token the provider did not sign is the endpoint's to refuse:
		// 401 with its Bearer challenge, and the DPoP one beside it.
		h, _, _ := strings.Cut(token, ".")
		forged := h + "." + b64([]byte(`{"sub":"pat","cnf":{"jkt":"`+key.jkt+`"}}`)) + ".c2ln"
		resp := postDPoP(t, url, forged, key.proof(t, "POST", url, forged, proofClaims{}))
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("status %s, want 401", resp.Status)
		}
		chs := challenges(t, resp)
		if chs["bearer"]["error"] != "invalid_token" || chs["dpop"] == nil {
			t.Errorf("challenges %v, want Bearer invalid_token and DPoP", chs)
		}
	})
	t.Run("no token", func(t *testing.T) {
		resp := post(t, url, "")
		chs := challenges(t, resp)
		want := map[string]string{"algs": strings.Join(oauth.DefaultAlgorithms, " ")}
		if diff := cmp.Diff(want, chs["dpop"]); diff != "" || chs["bearer"] == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s, challenges %v; DPoP's (-want +got):\n%s", resp.Status, chs, diff)
		}
	})
}

// With Required, a bearer token is refused even when bound to no key.
func TestDPoPRequired(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := dpopServer(t, v, oauth.DPoPOptions{Required: true, ResourceMetadataURL: "https://tools.example.test/.well-known/oauth-protected-resource/mcp"})
	resp := post(t, url, "Bearer "+boundToken(t, op, "pat", ""))
	checkDPoPRefusal(t, resp, "invalid_token")
	if got := challenges(t, resp)["dpop"]["resource_metadata"]; got != "https://tools.example.test/.well-known/oauth-protected-resource/mcp" {
		t.Errorf("resource_metadata %q", got)
	}
	key := newDPoPKey(t)
	token := boundToken(t, op, "pat", key.jkt)
	if resp := postDPoP(t, url, token, key.proof(t, "POST", url, token, proofClaims{})); resp.StatusCode != http.StatusOK {
		t.Errorf("a bound token with its proof: %s, want 200", resp.Status)
	}
}

// The replay cache in memory holds each proof once, refuses past its
// bound, and forgets a proof once its window ended.
func TestReplayCache(t *testing.T) {
	ctx := context.Background()
	c := oauth.NewReplayCache(2)
	later := time.Now().Add(time.Minute)
	for _, step := range []struct {
		id        string
		until     time.Time
		first, ok bool
	}{
		{"a", later, true, true},
		{"a", later, false, true},
		{"b", time.Now().Add(-time.Second), true, true}, // ended at once
		{"c", later, true, true},                        // b's room
		{"d", later, false, false},                      // full of live proofs
		{"b", later, false, false},                      // still full: never let in unrecorded
	} {
		first, err := c.Use(ctx, step.id, step.until)
		if first != step.first || (err == nil) != step.ok {
			t.Errorf("Use(%q) = %v, %v; want %v, error %v", step.id, first, err, step.first, !step.ok)
		}
	}
}

// NewDPoP names what is wrong.
func TestNewDPoPRefuses(t *testing.T) {
	confirm := func(context.Context, string) (string, error) { return "", nil }
	for _, tc := range []struct {
		opts oauth.DPoPOptions
		want string
	}{
		{oauth.DPoPOptions{}, "Confirmation is nil"},
		{oauth.DPoPOptions{Confirmation: confirm, Algorithms: []string{"HS256"}}, `"HS256" is not an asymmetric`},
		{oauth.DPoPOptions{Confirmation: confirm, Algorithms: []string{}}, "Algorithms is empty"},
		{oauth.DPoPOptions{Confirmation: confirm, Window: -time.Second}, "Window -1s is negative"},
		{oauth.DPoPOptions{Confirmation: confirm, URL: "/mcp"}, `URL "/mcp" is not an absolute`},
	} {
		if _, err := oauth.NewDPoP(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("NewDPoP(%+v) = %v, want %q", tc.opts, err, tc.want)
		}
	}
}

// everFirst is a replay cache that never saw a proof: the benchmark
// reuses one.
type everFirst struct{}

func (everFirst) Use(context.Context, string, time.Time) (bool, error) { return true, nil }

// BenchmarkDPoPProof is the cost a DPoP request adds: the proof's check
// (ES256 signature, claims, thumbprint) and the token's binding, with the
// token's verification cached, as it is after its first request; the
// replay cache is left out ("check"), or in memory ("memory", with a
// proof signed per request outside the timing).
func BenchmarkDPoPProof(b *testing.B) {
	op := startOP(b)
	v := newJWTVerifier(b, op, oauth.JWTOptions{})
	key := newDPoPKey(b)
	token := boundToken(b, op, "pat", key.jkt)
	const url = "https://tools.example.test/mcp"
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	for _, bc := range []struct {
		name   string
		replay oauth.ReplayCache
	}{{"check", everFirst{}}, {"memory", oauth.NewReplayCache(0)}} {
		b.Run(bc.name, func(b *testing.B) {
			d, err := oauth.NewDPoP(oauth.DPoPOptions{Confirmation: v.Confirmation, URL: url, Replay: bc.replay})
			if err != nil {
				b.Fatal(err)
			}
			h := d.Handler(next)
			proof := key.proof(b, "POST", url, token, proofClaims{})
			for b.Loop() {
				if bc.name == "memory" {
					b.StopTimer()
					proof = key.proof(b, "POST", url, token, proofClaims{})
					b.StartTimer()
				}
				r := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/mcp", nil)
				r.Header.Set("Authorization", "DPoP "+token)
				r.Header.Set("DPoP", proof)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != http.StatusOK {
					b.Fatalf("HTTP %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// A proof that the replay cache cannot record (here: full of proofs
// within their window) is refused with 503 and Retry-After, never let in.
func TestDPoPReplayCacheFull(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	url := dpopServer(t, v, oauth.DPoPOptions{Replay: oauth.NewReplayCache(1)})
	key := newDPoPKey(t)
	token := boundToken(t, op, "pat", key.jkt)
	if resp := postDPoP(t, url, token, key.proof(t, "POST", url, token, proofClaims{})); resp.StatusCode != http.StatusOK {
		t.Fatalf("the first proof: %s", resp.Status)
	}
	resp := postDPoP(t, url, token, key.proof(t, "POST", url, token, proofClaims{}))
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a proof the full cache cannot record: %s, Retry-After %q; want 503 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
}

// A "cnf" claim that binds to nothing this package can check, or to a
// malformed thumbprint, refuses the token; another confirmation method
// ("x5t#S256") binds it to no DPoP key.
func TestJWTConfirmation(t *testing.T) {
	op := startOP(t)
	v := newJWTVerifier(t, op, oauth.JWTOptions{})
	now := time.Now().Unix()
	sign := func(cnf any) string {
		return op.Sign(t, map[string]any{"iss": op.Issuer, "sub": "pat", "aud": resource, "iat": now, "exp": now + 60, "cnf": cnf})
	}
	key := newDPoPKey(t)
	for _, tc := range []struct {
		cnf     any
		jkt     string
		refused bool
	}{
		{map[string]any{"jkt": key.jkt}, key.jkt, false},
		{map[string]any{"x5t#S256": "abc"}, "", false},
		{"jkt", "", true},
		{map[string]any{"jkt": "not-a-thumbprint"}, "", true},
		{map[string]any{"jkt": 7}, "", true},
	} {
		jkt, err := v.Confirmation(context.Background(), sign(tc.cnf))
		if jkt != tc.jkt || (err != nil) != tc.refused || (err != nil && !errors.Is(err, server.ErrInvalidToken)) {
			t.Errorf("cnf %v: Confirmation = %q, %v; want %q, refused %v", tc.cnf, jkt, err, tc.jkt, tc.refused)
		}
	}
}
