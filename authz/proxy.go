package authz

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/toolroute/toolroute/tool"
)

// The defaults of [ProxyAuth]'s zero fields.
const (
	defaultAuthPath   = "/api/v3/auth"
	defaultRoutesPath = "/api/v3/auth-routes"
	defaultTimeout    = 5 * time.Second
)

// maxProxyResponse bounds what ProxyAuth reads of an answer.
const maxProxyResponse = 16 << 20

// ProxyAuth is an [Authorizer] that asks the auth API of the RBAC proxy in
// front of the upstream services, so that toolroute decides exactly as the
// proxy will.
//
// One decision is
//
//	POST {BaseURL}{AuthPath}
//	Authorization: Bearer TOKEN
//	X-Forwarded-Uri: /catalog/api/v1/items/42
//	X-Forwarded-Method: GET
//
// answered 204 or 200 (allowed), 403 (denied), 401 (unauthenticated);
// any other status, a redirect, a transport error or a timeout is an
// outage. A batch is
//
//	POST {BaseURL}{RoutesPath}
//	Authorization: Bearer TOKEN
//	[{"path": "/catalog/api/v1/items/{id}", "method": "GET"}, ...]
//
// answered 200 with [{"path", "method", "authResult": true|false}, ...]
// (in any order, one entry per route asked), 401 (unauthenticated) or 403
// (every route denied); anything else, including a body that does not
// answer every route, is an outage. Duplicate routes are asked once.
//
// A single decision's answer is a bare status, which a misbehaving proxy
// (or a login page in front of it) may give to any token; the batch
// answer names each route asked. To learn whether the proxy knows a
// token at all, ask AllowMany: only its documented answers (the JSON
// decisions, 401, 403) identify a token, anything else is an outage.
//
// A caller without a bearer is unauthenticated without asking. Use a
// *ProxyAuth; its fields must not change once it is in use. Wrap it in
// [Cached] to spare the proxy.
type ProxyAuth struct {
	// BaseURL is the proxy's URL, e.g. "http://rbac-proxy:8080". Required:
	// without it every decision is an outage.
	BaseURL string
	// AuthPath is the path of the single-decision endpoint. "" selects
	// "/api/v3/auth".
	AuthPath string
	// RoutesPath is the path of the batch endpoint. "" selects
	// "/api/v3/auth-routes".
	RoutesPath string
	// Client sends the requests. nil selects [http.DefaultClient].
	// Redirects are never followed, whatever its CheckRedirect says: a
	// redirect is an outage.
	Client *http.Client
	// Timeout bounds each request to the proxy (the context's deadline
	// applies too). 0 selects 5 seconds; a negative value turns it off (the
	// context's deadline still applies).
	Timeout time.Duration
}

// Allow asks the proxy's single-decision endpoint whether c may reach r.
func (p *ProxyAuth) Allow(ctx context.Context, c Caller, r tool.Route) error {
	if err := checkBearer(c); err != nil {
		return err
	}
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	req, err := p.newRequest(ctx, p.AuthPath, defaultAuthPath, c, nil)
	if err != nil {
		return &OutageError{Err: err}
	}
	req.Header.Set("X-Forwarded-Uri", r.URI)
	req.Header.Set("X-Forwarded-Method", r.Method)
	resp, err := p.do(req)
	if err != nil {
		return &OutageError{Err: err}
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK, http.StatusNoContent:
		return nil
	case http.StatusForbidden:
		return &DeniedError{Route: r, Subject: c.Subject, Reason: "denied by the RBAC proxy"}
	case http.StatusUnauthorized:
		return &UnauthenticatedError{Reason: "the RBAC proxy refused the credential"}
	}
	return &OutageError{Err: fmt.Errorf("authz: RBAC proxy %s answered %s", req.URL.Redacted(), resp.Status)}
}

// routeQuery is one entry of a batch request and, with AuthResult, of its
// answer.
type routeQuery struct {
	Path       string `json:"path"`
	Method     string `json:"method"`
	AuthResult *bool  `json:"authResult,omitempty"`
}

// AllowMany asks the proxy's batch endpoint about every distinct route of
// rs in one request.
func (p *ProxyAuth) AllowMany(ctx context.Context, c Caller, rs []tool.Route) ([]bool, error) {
	if err := checkBearer(c); err != nil {
		return nil, err
	}
	if len(rs) == 0 {
		return []bool{}, nil
	}
	index := make(map[tool.Route]int, len(rs))
	query := make([]routeQuery, 0, len(rs))
	for _, r := range rs {
		if _, ok := index[r]; !ok {
			index[r] = len(query)
			query = append(query, routeQuery{Path: r.URI, Method: r.Method})
		}
	}
	body, err := json.Marshal(query)
	if err != nil {
		return nil, &OutageError{Err: err}
	}
	ctx, cancel := p.withTimeout(ctx)
	defer cancel()
	req, err := p.newRequest(ctx, p.RoutesPath, defaultRoutesPath, c, body)
	if err != nil {
		return nil, &OutageError{Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.do(req)
	if err != nil {
		return nil, &OutageError{Err: err}
	}
	defer drain(resp)
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusUnauthorized:
		return nil, &UnauthenticatedError{Reason: "the RBAC proxy refused the credential"}
	case http.StatusForbidden:
		return make([]bool, len(rs)), nil
	default:
		return nil, &OutageError{Err: fmt.Errorf("authz: RBAC proxy %s answered %s", req.URL.Redacted(), resp.Status)}
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxProxyResponse+1))
	if err != nil {
		return nil, &OutageError{Err: fmt.Errorf("authz: reading the RBAC proxy's answer: %w", err)}
	}
	if len(data) > maxProxyResponse {
		return nil, &OutageError{Err: fmt.Errorf("authz: the RBAC proxy's answer exceeds %d bytes", maxProxyResponse)}
	}
	var answer []routeQuery
	if err := json.Unmarshal(data, &answer); err != nil {
		return nil, &OutageError{Err: fmt.Errorf("authz: malformed answer from the RBAC proxy: %w", err)}
	}
	decided := make([]*bool, len(query))
	for _, a := range answer {
		i, ok := index[tool.Route{URI: a.Path, Method: a.Method}]
		switch {
		case !ok:
			return nil, &OutageError{Err: fmt.Errorf("authz: malformed answer from the RBAC proxy: %s %s was not asked", a.Method, a.Path)}
		case a.AuthResult == nil:
			return nil, &OutageError{Err: fmt.Errorf("authz: malformed answer from the RBAC proxy: %s %s has no authResult", a.Method, a.Path)}
		case decided[i] != nil && *decided[i] != *a.AuthResult:
			return nil, &OutageError{Err: fmt.Errorf("authz: malformed answer from the RBAC proxy: %s %s answered both ways", a.Method, a.Path)}
		}
		decided[i] = a.AuthResult
	}
	out := make([]bool, len(rs))
	for j, r := range rs {
		d := decided[index[r]]
		if d == nil {
			return nil, &OutageError{Err: fmt.Errorf("authz: malformed answer from the RBAC proxy: no answer for %s", r)}
		}
		out[j] = *d
	}
	return out, nil
}

// checkBearer refuses a caller without a usable bearer.
func checkBearer(c Caller) error {
	if c.Bearer == "" {
		return &UnauthenticatedError{Reason: "no bearer token"}
	}
	for i := 0; i < len(c.Bearer); i++ {
		if b := c.Bearer[i]; b < ' ' || b == 0x7f {
			return &UnauthenticatedError{Reason: "the bearer token holds a control character"}
		}
	}
	return nil
}

func (p *ProxyAuth) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	switch {
	case p.Timeout < 0:
		return ctx, func() {}
	case p.Timeout == 0:
		return context.WithTimeout(ctx, defaultTimeout)
	}
	return context.WithTimeout(ctx, p.Timeout)
}

func (p *ProxyAuth) newRequest(ctx context.Context, path, def string, c Caller, body []byte) (*http.Request, error) {
	if p.BaseURL == "" {
		return nil, errors.New("authz: ProxyAuth.BaseURL is empty")
	}
	if path == "" {
		path = def
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(p.BaseURL, "/")+path, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Bearer)
	return req, nil
}

// do sends req without following redirects: a login page behind a 302
// must never read as "allowed".
func (p *ProxyAuth) do(req *http.Request) (*http.Response, error) {
	client := http.DefaultClient
	if p.Client != nil {
		client = p.Client
	}
	cl := *client
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return cl.Do(req)
}

// drain reads a little of resp's body, so that the connection can be
// reused, and closes it.
func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}
