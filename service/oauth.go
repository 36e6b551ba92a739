package service

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/server"
)

// oauthAccess is how OAuth mode identifies callers and reaches the
// upstreams.
type oauthAccess struct {
	cfg      OAuth
	verify   server.TokenVerifier
	ready    func(context.Context) error
	closers  []func() error
	exchange *oauth.Exchanger   // nil without -upstream-audience
	embedded *oauth.JWTVerifier // checks exchanged tokens at the embedded upstreams; nil without -upstream-audience
	jwt      *oauth.JWTVerifier // the callers' tokens' verifier; nil with -introspect
	dpop     *oauth.DPoP        // nil without -dpop (or before startDPoP)
}

// newOAuthAccess builds the verifier (JWT or introspection) and, with
// -upstream-audience, the token exchanger of cfg.
func newOAuthAccess(cfg OAuth, dry bool) (*oauthAccess, error) {
	o := &oauthAccess{cfg: cfg}
	if dry {
		for _, f := range []struct{ flag, file string }{{"introspect-secret-file", cfg.IntrospectSecretFile}, {"exchange-secret-file", cfg.ExchangeSecretFile}} {
			if f.file != "" {
				if _, err := readSecret(f.flag, f.file); err != nil {
					return nil, err
				}
			}
		}
		o.verify = func(context.Context, string, *http.Request) (authz.Caller, error) {
			return authz.Caller{}, errors.New("service: check verifies no token")
		}
		return o, nil
	}
	if cfg.Introspect != "" {
		secret, err := readSecret("introspect-secret-file", cfg.IntrospectSecretFile)
		if err != nil {
			return nil, err
		}
		v, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{
			URL: cfg.Introspect, ClientID: cfg.IntrospectClientID, ClientSecret: secret,
			Audience: cfg.Audience, Issuer: cfg.Issuer, RolesClaim: cfg.RolesClaim, ScopesClaim: cfg.ScopesClaim,
		})
		if err != nil {
			return nil, err
		}
		o.verify, o.ready = v.Verify, v.Ready
	} else {
		v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: cfg.Issuer, Audience: cfg.Audience, RolesClaim: cfg.RolesClaim, ScopesClaim: cfg.ScopesClaim})
		if err != nil {
			return nil, err
		}
		o.verify, o.ready, o.jwt = v.Verify, v.Ready, v
		o.closers = append(o.closers, v.Close)
	}
	if cfg.UpstreamAudience != "" {
		secret, err := readSecret("exchange-secret-file", cfg.ExchangeSecretFile)
		if err != nil {
			return nil, err
		}
		if o.exchange, err = oauth.NewExchanger(oauth.ExchangeOptions{
			Issuer: cfg.Issuer, ClientID: cfg.ExchangeClientID, ClientSecret: secret, Audience: cfg.UpstreamAudience,
		}); err != nil {
			return nil, err
		}
		if o.embedded, err = oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: cfg.Issuer, Audience: cfg.UpstreamAudience, RolesClaim: cfg.RolesClaim}); err != nil {
			return nil, err
		}
		o.closers = append(o.closers, o.embedded.Close)
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

// startDPoP builds the DPoP check of -dpop, recording proofs in
// replay (nil: in this process). It does nothing without -dpop.
func (o *oauthAccess) startDPoP(replay oauth.ReplayCache, logger *slog.Logger) error {
	if o == nil || !o.cfg.DPoP || o.jwt == nil {
		return nil
	}
	var err error
	o.dpop, err = oauth.NewDPoP(oauth.DPoPOptions{
		Confirmation:        o.jwt.Confirmation,
		URL:                 o.cfg.PublicURL,
		ResourceMetadataURL: resourceMetadataURL(o.cfg.PublicURL),
		Required:            o.cfg.DPoPRequired,
		Replay:              replay,
		Logger:              logger,
	})
	if err != nil {
		return fmt.Errorf("-dpop: %w", err)
	}
	return nil
}

// resourceMetadataURL is the RFC 9728 well-known URL of the protected
// resource metadata of the resource publicURL, as the server serves it.
func resourceMetadataURL(publicURL string) string {
	u, err := url.Parse(publicURL)
	if err != nil {
		return ""
	}
	u.Path = "/.well-known/oauth-protected-resource" + strings.TrimSuffix(u.Path, "/")
	u.RawPath, u.RawQuery, u.Fragment = "", "", ""
	return u.String()
}

// httpOptions sets the verifier, readiness, protected resource metadata
// and DPoP check of OAuth mode in opts.
func (o *oauthAccess) httpOptions(opts *server.HTTPServerOptions, title string) {
	opts.Endpoint.Verifier = o.verify
	opts.ReadyCheck = o.ready
	if o.dpop != nil {
		opts.Endpoint.Wrap = o.dpop.Handler
	}
	opts.ResourceMetadata = &oauthex.ProtectedResourceMetadata{
		Resource:               o.cfg.PublicURL,
		AuthorizationServers:   []string{o.cfg.Issuer},
		BearerMethodsSupported: []string{"header"},
		ResourceName:           title,
	}
	if o.dpop != nil {
		// RFC 9728 §2: the proof algorithms accepted, and whether every
		// request must use DPoP.
		opts.ResourceMetadata.DPOPSigningAlgValuesSupported = slices.Clone(oauth.DefaultAlgorithms)
		opts.ResourceMetadata.DPOPBoundAccessTokensRequired = o.cfg.DPoPRequired
	}
}

// upstream is the base of an upstream client's transport: the caller's
// token never goes upstream; with -upstream-audience a token exchanged
// for that audience does.
func (o *oauthAccess) upstream(base http.RoundTripper) http.RoundTripper {
	if o.exchange != nil {
		return o.exchange.Transport(base)
	}
	return oauth.WithoutBearer(base)
}

// guardUpstream makes an embedded upstream accept only tokens of the
// issuer for the upstream audience (the exchanged ones), when there are
// any; it leaves h alone otherwise.
func (o *oauthAccess) guardUpstream(h http.Handler) http.Handler {
	if o == nil || o.embedded == nil {
		return h
	}
	v := o.embedded
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		var outage *authz.OutageError
		switch _, err := v.Verify(r.Context(), tok, r); {
		case !ok || tok == "":
			w.Header().Set("WWW-Authenticate", "Bearer")
			http.Error(w, "no bearer token", http.StatusUnauthorized)
		case err == nil:
			h.ServeHTTP(w, r)
		case errors.Is(err, server.ErrInvalidToken):
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
		case errors.As(err, &outage):
			http.Error(w, "authorization server unavailable", http.StatusServiceUnavailable)
		default:
			http.Error(w, "token verification failed", http.StatusInternalServerError)
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
func (o *oauthAccess) describe(w io.Writer, name string) {
	how := "JWT access tokens"
	if o.cfg.Introspect != "" {
		how = "opaque access tokens, introspected at " + o.cfg.Introspect
	}
	fmt.Fprintf(w, "%s: OAuth: %s of issuer %s for audience %s, roles from claim %q\n", name, how, o.cfg.Issuer, o.cfg.Audience, o.cfg.RolesClaim)
	fmt.Fprintf(w, "%s: OAuth: protected resource metadata for %s\n", name, o.cfg.PublicURL)
	switch {
	case o.dpop != nil && o.cfg.DPoPRequired:
		fmt.Fprintf(w, "%s: OAuth: DPoP-bound tokens only, each request with its proof (RFC 9449)\n", name)
	case o.dpop != nil:
		fmt.Fprintf(w, "%s: OAuth: DPoP-bound tokens with their proofs (RFC 9449); such tokens are refused as bearer tokens\n", name)
	}
	if o.exchange != nil {
		fmt.Fprintf(w, "%s: OAuth: upstream requests carry tokens exchanged for audience %s\n", name, o.cfg.UpstreamAudience)
	} else {
		fmt.Fprintf(w, "%s: OAuth: upstream requests carry no token (the caller's is never passed through)\n", name)
	}
}
