package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/sdkfix/bearerstatus"
	"github.com/toolroute/toolroute/internal/serve/verifyguard"
)

// errUnavailable is what a verifier's outage becomes: HTTP 503.
var errUnavailable = errors.New("server: token verifier outage")

// unavailableText is the body of a 503 answer to a request whose token
// could not be verified.
const unavailableText = "authorization server unavailable: the bearer token cannot be verified now; try again later"

// wellKnownResource is the well-known path of OAuth protected resource
// metadata (RFC 9728 §3).
const wellKnownResource = "/.well-known/oauth-protected-resource"

// bearerToken returns the token of an Authorization header made of two
// fields, "Bearer" (in any case) and the token, split as strings.Fields
// splits (the SDK's middleware reads it so).
func bearerToken(h string) (string, bool) {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "bearer") {
		return "", false
	}
	return f[1], true
}

// requireBearer identifies the caller of every request to next with
// o.Verifier and answers, when it cannot:
//
//   - more than one Authorization header: 400, so that a proxy in front
//     (which may read the last) and the server (the first) can never
//     disagree about the caller;
//   - no bearer token: 401, WWW-Authenticate: Bearer resource_metadata="…";
//   - a refused token: 401, the same challenge with error="invalid_token"
//     (RFC 6750 §3.1);
//   - a verifier outage (an *authz.OutageError): 503, with a body saying
//     so and Retry-After — an outage is not the client's fault;
//   - a request the guard in front of the verifier answers itself
//     (internal/serve/verifyguard: too many refused tokens from the
//     client's address, too many verifications in flight): 429 or 503
//     with Retry-After, without verifying;
//   - any other verifier failure: 500;
//   - a verified caller whose token lacks scopes the operation needs,
//     when o.StepUp says so: 403, the challenge with
//     error="insufficient_scope" and scope="…".
//
// The SDK's [auth.RequireBearerToken] still puts the token's information
// in the request's context (the streamable handler binds sessions with
// it), from the verification done here: internal/sdkfix/bearerstatus
// hands it over, because the SDK answers every verifier failure itself.
//
// Verifier failures are reported to rep.
func (o *HTTPOptions) requireBearer(next http.Handler, rep reporter) http.Handler {
	verify := verifyguard.New(o.verifier(rep)).Verify
	metadataURL := o.ResourceMetadataURL
	sdk := bearerstatus.New(next, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})
	challenge := func(w http.ResponseWriter, params ...string) {
		if metadataURL != "" {
			params = append([]string{fmt.Sprintf("resource_metadata=%q", metadataURL)}, params...)
		}
		v := "Bearer"
		if len(params) > 0 {
			v += " " + strings.Join(params, ", ")
		}
		w.Header().Set("WWW-Authenticate", v)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(r.Header["Authorization"]) > 1 {
			http.Error(w, "more than one Authorization header", http.StatusBadRequest)
			return
		}
		token, ok := bearerToken(r.Header.Get("Authorization"))
		if !ok {
			challenge(w)
			http.Error(w, "no bearer token", http.StatusUnauthorized)
			return
		}
		ti, err := verify(r.Context(), token, r)
		var refusal *verifyguard.Refusal
		switch {
		case err == nil:
			if o.StepUp != nil {
				c, _ := ti.Extra[tokenCallerKey].(authz.Caller)
				if scopes := o.StepUp(r, c); len(scopes) > 0 {
					challenge(w, `error="insufficient_scope"`, "scope="+strconv.Quote(strings.Join(scopes, " ")))
					http.Error(w, "insufficient scope: the token lacks a scope this operation needs; ask for a token with the scopes the WWW-Authenticate challenge names", http.StatusForbidden)
					return
				}
			}
			sdk.Serve(w, r, ti)
		case errors.Is(err, ErrInvalidToken):
			challenge(w, `error="invalid_token"`)
			http.Error(w, "invalid token", http.StatusUnauthorized)
		case errors.Is(err, errUnavailable):
			w.Header().Set("Retry-After", "10")
			http.Error(w, unavailableText, http.StatusServiceUnavailable)
		case errors.As(err, &refusal):
			refusal.Write(w)
		default:
			http.Error(w, errVerifier.Error(), http.StatusInternalServerError)
		}
	})
}

// resourceMetadataURL is the RFC 9728 well-known URL of
// [HTTPServerOptions.ResourceMetadata]'s resource, or "".
func (o *HTTPServerOptions) resourceMetadataURL() string {
	if o.ResourceMetadata == nil {
		return ""
	}
	u, err := url.Parse(o.ResourceMetadata.Resource)
	if err != nil {
		return "" // refused by checkResourceMetadata
	}
	u.Path = wellKnownResource + strings.TrimSuffix(u.Path, "/")
	u.RawPath = ""
	return u.String()
}

// checkResourceMetadata refuses resource metadata whose resource is not
// an absolute http(s) URL without a fragment (RFC 9728 §1.2).
func (o *HTTPServerOptions) checkResourceMetadata() error {
	md := o.ResourceMetadata
	if md == nil {
		return nil
	}
	u, err := url.Parse(md.Resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Fragment != "" {
		return fmt.Errorf("server: HTTPServerOptions.ResourceMetadata.Resource %q must be an absolute http(s) URL without a fragment: the MCP endpoint's public URL", md.Resource)
	}
	return nil
}

// handleResourceMetadata serves [HTTPServerOptions.ResourceMetadata], if set, at
// /.well-known/oauth-protected-resource, with the MCP endpoint's path
// appended (RFC 9728 §3.1), and with the resource URL's path appended if
// that differs (a proxy in front may mount the endpoint elsewhere).
func (o *HTTPServerOptions) handleResourceMetadata(mux *http.ServeMux, endpoint string) {
	md := o.ResourceMetadata
	if md == nil {
		return
	}
	h := auth.ProtectedResourceMetadataHandler(md)
	paths := []string{wellKnownResource, wellKnownResource + strings.TrimSuffix(endpoint, "/")}
	if u, err := url.Parse(md.Resource); err == nil {
		paths = append(paths, wellKnownResource+strings.TrimSuffix(u.EscapedPath(), "/"))
	}
	seen := map[string]bool{}
	for _, p := range paths {
		if !seen[p] {
			seen[p] = true
			mux.Handle(p, h)
		}
	}
}
