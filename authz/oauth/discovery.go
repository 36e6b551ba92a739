package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/oauthex"
)

// maxDocument bounds the size of every document read from an
// authorization server (metadata, key sets, introspection and token
// responses).
const maxDocument = 1 << 20

// defaultTimeout bounds every request to an authorization server when the
// options give no HTTP client.
const defaultTimeout = 10 * time.Second

// defaultClient is the HTTP client of the options that give none.
func defaultClient(c *http.Client) *http.Client {
	if c != nil {
		return c
	}
	return &http.Client{Timeout: defaultTimeout}
}

// checkIssuer checks an issuer identifier (RFC 8414 §2: an https URL
// without query or fragment; http is accepted for loopback and tests).
func checkIssuer(what, issuer string) error {
	u, err := url.Parse(issuer)
	switch {
	case issuer == "":
		return fmt.Errorf("oauth: %s is empty", what)
	case err != nil:
		return fmt.Errorf("oauth: %s %q: %v", what, issuer, err)
	case u.Scheme != "https" && u.Scheme != "http", u.Host == "":
		return fmt.Errorf("oauth: %s %q is not an http(s) URL", what, issuer)
	case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
		return fmt.Errorf("oauth: %s %q must not have a query, fragment or user info", what, issuer)
	}
	return nil
}

// discover fetches the issuer's authorization server metadata: the OpenID
// Connect discovery document ({issuer}/.well-known/openid-configuration),
// or else the RFC 8414 document (/.well-known/oauth-authorization-server
// inserted before the issuer's path). The document's issuer must equal
// issuer exactly (OpenID Connect Discovery §4.3, RFC 8414 §3.3).
//
// An unreachable server, or one answering 5xx, is an outage; anything
// else wrong is a configuration error. Both are returned as errors; the
// caller decides.
func discover(ctx context.Context, c *http.Client, issuer string) (*oauthex.AuthServerMeta, error) {
	u, err := url.Parse(issuer)
	if err != nil {
		return nil, fmt.Errorf("oauth: issuer %q: %v", issuer, err)
	}
	rfc8414 := *u
	rfc8414.Path = "/.well-known/oauth-authorization-server" + strings.TrimSuffix(u.Path, "/")
	var errs []error
	for _, where := range []string{strings.TrimSuffix(issuer, "/") + "/.well-known/openid-configuration", rfc8414.String()} {
		var meta oauthex.AuthServerMeta
		err := getJSON(ctx, c, where, &meta)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if meta.Issuer != issuer {
			return nil, fmt.Errorf("oauth: discovery document %s names the issuer %q, not %q", where, meta.Issuer, issuer)
		}
		return &meta, nil
	}
	return nil, errors.Join(errs...)
}

// getJSON decodes the JSON document at where into v.
func getJSON(ctx context.Context, c *http.Client, where string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, where, nil)
	if err != nil {
		return fmt.Errorf("oauth: GET %s: %v", where, err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("oauth: GET %s: %w", where, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, maxDocument))
		return fmt.Errorf("oauth: GET %s: status %s", where, resp.Status)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "application/json" {
		return fmt.Errorf("oauth: GET %s: content type %q, want application/json", where, resp.Header.Get("Content-Type"))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxDocument)).Decode(v); err != nil {
		return fmt.Errorf("oauth: GET %s: %v", where, err)
	}
	return nil
}
