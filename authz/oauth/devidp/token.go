package devidp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// TokenOptions is what a token request asks for, beyond the client's own
// token. The zero value asks for the client's own token.
type TokenOptions struct {
	// Subject is the token's subject ([ScopeSubject]). "" leaves it to
	// the provider: a client's own ID.
	Subject string
	// Roles are the token's roles ([ScopeRole]); nil leaves them to the
	// provider: none are minted.
	Roles []string
	// Audience is the token's audience ([ScopeAudience]); nil leaves it
	// to the provider: the client's Audience.
	Audience []string
	// HTTPClient sends the requests. nil selects a client with a 10 s
	// timeout.
	HTTPClient *http.Client
}

// scopes returns the request's scope values, "openid" first, or an
// error naming the value that cannot be a scope token.
func (o TokenOptions) scopes() ([]string, error) {
	scopes := []string{"openid"}
	add := func(what, prefix, value string) error {
		if err := checkScopeValue(value); err != nil {
			return fmt.Errorf("devidp: %s %q %v", what, value, err)
		}
		scopes = append(scopes, prefix+value)
		return nil
	}
	if o.Subject != "" {
		if err := add("subject", ScopeSubject, o.Subject); err != nil {
			return nil, err
		}
	}
	for _, r := range o.Roles {
		if err := add("role", ScopeRole, r); err != nil {
			return nil, err
		}
	}
	for _, a := range o.Audience {
		if err := add("audience", ScopeAudience, a); err != nil {
			return nil, err
		}
	}
	return scopes, nil
}

// checkScopeValue refuses a value that cannot be part of a scope token
// (RFC 6749 §3.3: printable ASCII but space, '"' and '\').
func checkScopeValue(v string) error {
	if v == "" {
		return errors.New("is empty")
	}
	for _, c := range v {
		if c <= ' ' || c > '~' || c == '"' || c == '\\' {
			return fmt.Errorf("holds %q: want printable ASCII without space, '\"' or '\\'", c)
		}
	}
	return nil
}

// RequestToken requests an access token from the OpenID provider whose
// issuer is issuer, as the client clientID (client_secret_basic, the
// client credentials grant): it discovers the token endpoint from the
// issuer's discovery document and asks for the scope opts make ("openid
// sub:alice role:editor ..."). A provider that grants less than the roles
// asked for is an error, so that a token never silently lacks them.
//
// Its errors tell a provider that does not answer (none runs at issuer)
// from one that refuses (the error and description of its answer); they
// never hold the secret.
func RequestToken(ctx context.Context, issuer, clientID, clientSecret string, opts TokenOptions) (string, error) {
	scopes, err := opts.scopes()
	if err != nil {
		return "", err
	}
	hc := opts.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 10 * time.Second}
	}
	endpoint, err := discoverTokenEndpoint(ctx, hc, issuer)
	if err != nil {
		return "", err
	}
	resp, err := postForm(ctx, hc, endpoint, clientID, clientSecret, url.Values{
		"grant_type": {"client_credentials"},
		"scope":      {strings.Join(scopes, " ")},
	})
	if err != nil {
		return "", fmt.Errorf("devidp: the token endpoint %s of issuer %s does not answer: %w", endpoint, issuer, err)
	}
	defer resp.Body.Close()
	var out struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		Scope       string `json:"scope"`
		Error       string `json:"error"`
		Description string `json:"error_description"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&out); err != nil {
		return "", fmt.Errorf("devidp: the token endpoint %s answered %s, not a token response: %v", endpoint, resp.Status, err)
	}
	switch {
	case out.Error != "":
		return "", fmt.Errorf("devidp: the token endpoint %s refused client %q: %s: %s", endpoint, clientID, out.Error, out.Description)
	case resp.StatusCode != http.StatusOK || out.AccessToken == "":
		return "", fmt.Errorf("devidp: the token endpoint %s answered %s without an access token", endpoint, resp.Status)
	case !strings.EqualFold(out.TokenType, "bearer"):
		return "", fmt.Errorf("devidp: the token endpoint %s issued a token of type %q, not a bearer token", endpoint, out.TokenType)
	}
	if out.Scope != "" {
		// RFC 6749 §5.1: a response names its scope when it grants other
		// than was asked.
		granted := strings.Fields(out.Scope)
		for _, s := range scopes[1:] {
			if !slices.Contains(granted, s) {
				return "", fmt.Errorf("devidp: issuer %s did not grant the scope %q (granted %q): is it a development provider, and client %q one that may mint tokens?", issuer, s, out.Scope, clientID)
			}
		}
	}
	return out.AccessToken, nil
}

// discoverTokenEndpoint reads the token endpoint from the issuer's
// discovery document, checking that it is the issuer's.
func discoverTokenEndpoint(ctx context.Context, hc *http.Client, issuer string) (string, error) {
	if u, err := url.Parse(issuer); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("devidp: issuer %q is not an http(s) URL, such as http://127.0.0.1:9400", issuer)
	}
	where := strings.TrimSuffix(issuer, "/") + DiscoveryPath
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return "", fmt.Errorf("devidp: issuer %q: %v", issuer, err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return "", &unreachableError{issuer: issuer, err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("devidp: issuer %s: %s answered %s: no OpenID provider there", issuer, where, resp.Status)
	}
	var md struct {
		Issuer        string `json:"issuer"`
		TokenEndpoint string `json:"token_endpoint"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&md); err != nil {
		return "", fmt.Errorf("devidp: issuer %s: %s is not a discovery document: %v", issuer, where, err)
	}
	switch {
	case md.Issuer != issuer:
		return "", fmt.Errorf("devidp: %s names the issuer %q, not %q: pass the issuer the provider announces", where, md.Issuer, issuer)
	case md.TokenEndpoint == "":
		return "", fmt.Errorf("devidp: issuer %s has no token endpoint", issuer)
	}
	return md.TokenEndpoint, nil
}

// postForm posts form to endpoint as the client id with secret
// (client_secret_basic, its parts form-encoded as RFC 6749 §2.3.1 asks).
func postForm(ctx context.Context, hc *http.Client, endpoint, id, secret string, form url.Values) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(id), url.QueryEscape(secret))
	return hc.Do(req)
}

// unreachableError is a token request's failure to reach the issuer at
// all: no provider runs there.
type unreachableError struct {
	issuer string
	err    error
}

func (e *unreachableError) Error() string {
	return fmt.Sprintf("devidp: no OpenID provider answers at issuer %s: %v", e.issuer, e.err)
}

func (e *unreachableError) Unwrap() error { return e.err }
