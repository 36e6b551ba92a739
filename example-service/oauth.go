package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/server"
)

// oauthConfig is the command line of OAuth mode (-oidc-issuer and the
// flags that go with it).
type oauthConfig struct {
	issuer             string // "" = OAuth mode off
	audience           string
	rolesClaim         string
	publicURL          string
	introspect         string // "" = JWT access tokens
	introspectClientID string
	introspectSecret   string // a file
	upstreamAudience   string // "" = no token exchange
	exchangeClientID   string
	exchangeSecret     string // a file
}

// register adds the OAuth flags to fs.
func (o *oauthConfig) register(fs *flag.FlagSet) {
	fs.StringVar(&o.issuer, "oidc-issuer", "", "OAuth mode: accept access tokens of the authorization server whose issuer is `URL` (excludes -tokens and -proxy-auth)")
	fs.StringVar(&o.audience, "audience", "", "with -oidc-issuer: this server's resource identifier `ID`, which a token's audience must contain")
	fs.StringVar(&o.rolesClaim, "roles-claim", oauth.DefaultRolesClaim, "with -oidc-issuer: the claim `PATH` holding the caller's roles (roles, realm_access.roles, groups, scope)")
	fs.StringVar(&o.publicURL, "public-url", "", "with -oidc-issuer: the MCP endpoint's public `URL`, for the protected resource metadata (default http://ADDR/mcp)")
	fs.StringVar(&o.introspect, "introspect", "", "with -oidc-issuer: verify opaque tokens at the introspection endpoint `URL` instead of JWTs")
	fs.StringVar(&o.introspectClientID, "introspect-client-id", "", "with -introspect: this server's client `ID` at the introspection endpoint")
	fs.StringVar(&o.introspectSecret, "introspect-secret-file", "", "with -introspect: the `FILE` holding that client's secret")
	fs.StringVar(&o.upstreamAudience, "upstream-audience", "", "with -oidc-issuer: exchange the caller's token for one of audience `ID` for the catalog (RFC 8693); the embedded catalog then checks it")
	fs.StringVar(&o.exchangeClientID, "exchange-client-id", "", "with -upstream-audience: this server's client `ID` for token exchange")
	fs.StringVar(&o.exchangeSecret, "exchange-secret-file", "", "with -upstream-audience: the `FILE` holding that client's secret")
}

// check refuses inconsistent OAuth flags, as usage errors, and fills in
// the default public URL.
func (o *oauthConfig) check(fs *flag.FlagSet, set map[string]bool, cfg *config) error {
	if o.issuer == "" {
		for _, name := range []string{"audience", "roles-claim", "public-url", "introspect", "introspect-client-id", "introspect-secret-file", "upstream-audience", "exchange-client-id", "exchange-secret-file"} {
			if set[name] {
				return usageError(fs, "-%s needs -oidc-issuer", name)
			}
		}
		return nil
	}
	switch {
	case cfg.tokensFile != "":
		return usageError(fs, "-oidc-issuer and -tokens exclude each other: callers come from the issuer's tokens")
	case cfg.proxyAuth != "":
		return usageError(fs, "-oidc-issuer and -proxy-auth exclude each other: with an RBAC proxy, the proxy judges bearer tokens")
	case cfg.stdio:
		return usageError(fs, "-oidc-issuer applies to HTTP only; over stdio the caller is -caller")
	case o.audience == "":
		return usageError(fs, "-oidc-issuer needs -audience: the identifier tokens for this server carry in their audience")
	case o.introspect == "" && (o.introspectClientID != "" || o.introspectSecret != ""):
		return usageError(fs, "-introspect-client-id and -introspect-secret-file need -introspect")
	case o.introspect != "" && (o.introspectClientID == "" || o.introspectSecret == ""):
		return usageError(fs, "-introspect needs -introspect-client-id and -introspect-secret-file")
	case o.upstreamAudience == "" && (o.exchangeClientID != "" || o.exchangeSecret != ""):
		return usageError(fs, "-exchange-client-id and -exchange-secret-file need -upstream-audience")
	case o.upstreamAudience != "" && (o.exchangeClientID == "" || o.exchangeSecret == ""):
		return usageError(fs, "-upstream-audience needs -exchange-client-id and -exchange-secret-file")
	}
	for _, f := range []struct{ name, value string }{{"oidc-issuer", o.issuer}, {"public-url", o.publicURL}, {"introspect", o.introspect}} {
		if f.value == "" {
			continue
		}
		if u, err := url.Parse(f.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError(fs, "-%s: %q is not an http(s) URL", f.name, f.value)
		}
	}
	if o.publicURL == "" {
		host, port, err := net.SplitHostPort(cfg.addr)
		if err != nil || port == "0" {
			return usageError(fs, "-oidc-issuer with -addr %s needs -public-url: the MCP endpoint's URL cannot be derived from it", cfg.addr)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "localhost"
		}
		o.publicURL = "http://" + net.JoinHostPort(host, port) + "/mcp"
	}
	return nil
}

// oauthAccess is how OAuth mode identifies callers and reaches the
// catalog.
type oauthAccess struct {
	cfg      oauthConfig
	verify   server.TokenVerifier
	ready    func(context.Context) error
	closers  []func() error
	exchange *oauth.Exchanger   // nil without -upstream-audience
	catalog  *oauth.JWTVerifier // checks exchanged tokens at the embedded catalog; nil without -upstream-audience
}

// newOAuthAccess builds the verifier (JWT or introspection) and, with
// -upstream-audience, the token exchanger of cfg.
func newOAuthAccess(cfg oauthConfig) (*oauthAccess, error) {
	o := &oauthAccess{cfg: cfg}
	if cfg.introspect != "" {
		secret, err := readSecret("introspect-secret-file", cfg.introspectSecret)
		if err != nil {
			return nil, err
		}
		v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{
			URL: cfg.introspect, ClientID: cfg.introspectClientID, ClientSecret: secret,
			Audience: cfg.audience, Issuer: cfg.issuer, RolesClaim: cfg.rolesClaim,
		})
		if err != nil {
			return nil, err
		}
		o.verify, o.ready = v.Verify, v.Ready
	} else {
		v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: cfg.issuer, Audience: cfg.audience, RolesClaim: cfg.rolesClaim})
		if err != nil {
			return nil, err
		}
		o.verify, o.ready = v.Verify, v.Ready
		o.closers = append(o.closers, v.Close)
	}
	if cfg.upstreamAudience != "" {
		secret, err := readSecret("exchange-secret-file", cfg.exchangeSecret)
		if err != nil {
			return nil, err
		}
		if o.exchange, err = oauth.NewExchanger(oauth.ExchangeOptions{
			Issuer: cfg.issuer, ClientID: cfg.exchangeClientID, ClientSecret: secret, Audience: cfg.upstreamAudience,
		}); err != nil {
			return nil, err
		}
		if o.catalog, err = oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: cfg.issuer, Audience: cfg.upstreamAudience, RolesClaim: cfg.rolesClaim}); err != nil {
			return nil, err
		}
		o.closers = append(o.closers, o.catalog.Close)
	}
	return o, nil
}

// readSecret reads a client secret from a file, without its trailing
// line break.
func readSecret(flagName, path string) (string, error) {
	data, err := readFile(flagName, path)
	if err != nil {
		return "", err
	}
	s := strings.TrimRight(string(data), "\r\n")
	if s == "" {
		return "", fmt.Errorf("-%s %s: empty secret", flagName, path)
	}
	return s, nil
}

// httpOptions sets the verifier, readiness and protected resource
// metadata of OAuth mode in opts.
func (o *oauthAccess) httpOptions(opts *server.HTTPServerOptions) {
	opts.Endpoint.Verifier = o.verify
	opts.ReadyCheck = o.ready
	opts.ResourceMetadata = &oauthex.ProtectedResourceMetadata{
		Resource:               o.cfg.publicURL,
		AuthorizationServers:   []string{o.cfg.issuer},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Catalog (toolroute example)",
	}
}

// upstream is the base of the catalog client's transport: the caller's
// token never goes upstream; with -upstream-audience a token exchanged
// for the catalog does.
func (o *oauthAccess) upstream(base http.RoundTripper) http.RoundTripper {
	if o.exchange != nil {
		return o.exchange.Transport(base)
	}
	return oauth.WithoutBearer(base)
}

// guardCatalog makes the embedded catalog accept only tokens of the
// issuer for the upstream audience (the exchanged ones), when there are
// any; it leaves h alone otherwise.
func (o *oauthAccess) guardCatalog(h http.Handler) http.Handler {
	if o == nil || o.catalog == nil {
		return h
	}
	v := o.catalog
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var outage *authz.OutageError
		switch _, err := v.Verify(r.Context(), tok, r); {
		case !ok || tok == "":
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "catalog: no bearer token", http.StatusUnauthorized)
		case err == nil:
			h.ServeHTTP(w, r)
		case errors.Is(err, server.ErrInvalidToken):
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "catalog: invalid token", http.StatusUnauthorized)
		case errors.As(err, &outage):
			http.Error(w, "catalog: authorization server unavailable", http.StatusServiceUnavailable)
		default:
			http.Error(w, "catalog: token verification failed", http.StatusInternalServerError)
		}
	})
}

// lifecycle closes the verifiers when the app stops.
func (o *oauthAccess) lifecycle() fx.Option {
	if o == nil {
		return fx.Options()
	}
	return fx.Invoke(func(lc fx.Lifecycle) {
		lc.Append(fx.StopHook(func(context.Context) error {
			var errs []error
			for _, c := range o.closers {
				errs = append(errs, c())
			}
			return errors.Join(errs...)
		}))
	})
}

// describe tells the operator how callers are identified.
func (o *oauthAccess) describe(w io.Writer) {
	how := "JWT access tokens"
	if o.cfg.introspect != "" {
		how = "opaque access tokens, introspected at " + o.cfg.introspect
	}
	fmt.Fprintf(w, "example-service: OAuth: %s of issuer %s for audience %s, roles from claim %q\n", how, o.cfg.issuer, o.cfg.audience, o.cfg.rolesClaim)
	fmt.Fprintf(w, "example-service: OAuth: protected resource metadata for %s\n", o.cfg.publicURL)
	if o.exchange != nil {
		fmt.Fprintf(w, "example-service: OAuth: catalog requests carry tokens exchanged for audience %s\n", o.cfg.upstreamAudience)
	} else {
		io.WriteString(w, "example-service: OAuth: catalog requests carry no token (the caller's is never passed through)\n")
	}
}
