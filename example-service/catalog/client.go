package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/toolroute/toolroute/tool"
)

// maxResponseBytes bounds what the client reads of a response body.
const maxResponseBytes = 1 << 20

// Client is a typed client of the catalog API. Every request path is
// built from the API's [tool.Route] values with [tool.Route.Bind], so an
// id is always exactly one escaped path segment.
//
// In example-service, HTTPClient's transport is authz's upstream
// transport: it checks each request against the calling tool's routes and
// the caller's rights before it is sent, and forwards the caller's bearer.
type Client struct {
	// BaseURL is the catalog's origin, "http://host:port", without a path:
	// request paths are the routes' own paths, as the RBAC proxy and the
	// upstream transport see them.
	BaseURL string
	// HTTPClient sends the requests; nil selects [http.DefaultClient].
	// Give it a transport built on [NewTransport], whose pool fits a
	// service's concurrency.
	HTTPClient *http.Client
}

// MaxConns bounds the connections a [NewTransport] transport opens to
// the catalog at once; as many stay open when idle. Requests beyond it
// wait for a connection (within their context's deadline) rather than
// flood the catalog.
const MaxConns = 256

// NewTransport returns the transport of a catalog client:
// [http.DefaultTransport]'s settings (proxy from the environment, dial,
// TLS and idle timeouts, HTTP/2) with a connection pool sized to a
// service's concurrency rather than to [http.DefaultTransport]'s 2 idle
// connections per host. With 2, a service serving 200 concurrent calls
// opens a connection for most requests and closes it after, leaving
// thousands of sockets in TIME_WAIT; with [MaxConns], connections are
// reused. Idle connections close after the default 90 seconds.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = MaxConns
	t.MaxIdleConnsPerHost = MaxConns
	t.MaxIdleConns = MaxConns
	return t
}

// NotFoundError is the error of a request for an item that does not
// exist.
type NotFoundError struct {
	ID string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("item %.128q not found", e.ID)
}

// InvalidIDError is the error of a request for an id that cannot be an
// item id: empty, "." or "..", or holding control characters. Such a
// request is never sent.
type InvalidIDError struct {
	ID string
	// Err is [tool.Route.Bind]'s refusal.
	Err error
}

func (e *InvalidIDError) Error() string {
	return fmt.Sprintf("invalid item id %.128q: it must be one non-empty path segment that is not \".\" or \"..\" and holds no \"/\", \"\\\" or control character, also once percent-decoded", e.ID)
}

func (e *InvalidIDError) Unwrap() error { return e.Err }

// APIError is an error response of the catalog API other than a missing
// item.
type APIError struct {
	// Status is the HTTP status code.
	Status int
	// Code and Message are the API's error code and message; Code is
	// empty if the body was not a catalog error.
	Code, Message string
}

func (e *APIError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("catalog: HTTP %d", e.Status)
	}
	return fmt.Sprintf("catalog: HTTP %d %.128s: %.1024s", e.Status, e.Code, e.Message)
}

// List returns every item, sorted by id.
func (c *Client) List(ctx context.Context) ([]Item, error) {
	var out ItemList
	if err := c.do(ctx, ListRoute, nil, nil, http.StatusOK, &out); err != nil {
		return nil, err
	}
	if out.Items == nil {
		out.Items = []Item{}
	}
	return out.Items, nil
}

// Get returns the item with id, or a [*NotFoundError].
func (c *Client) Get(ctx context.Context, id string) (Item, error) {
	var it Item
	err := c.do(ctx, GetRoute, map[string]string{"id": id}, nil, http.StatusOK, &it)
	return it, err
}

// Create creates an item and returns it with its new id.
func (c *Client) Create(ctx context.Context, name string, quantity int) (Item, error) {
	var it Item
	err := c.do(ctx, CreateRoute, nil, &ItemInput{Name: name, Quantity: &quantity}, http.StatusCreated, &it)
	return it, err
}

// Update replaces the name and quantity of the item with id and returns
// it, or a [*NotFoundError].
func (c *Client) Update(ctx context.Context, id, name string, quantity int) (Item, error) {
	var it Item
	err := c.do(ctx, UpdateRoute, map[string]string{"id": id}, &ItemInput{Name: name, Quantity: &quantity}, http.StatusOK, &it)
	return it, err
}

// Delete deletes the item with id, or returns a [*NotFoundError].
func (c *Client) Delete(ctx context.Context, id string) error {
	return c.do(ctx, DeleteRoute, map[string]string{"id": id}, nil, http.StatusNoContent, nil)
}

// do sends one request on route r bound with values, and decodes a
// response of status want into out (if not nil).
func (c *Client) do(ctx context.Context, r tool.Route, values map[string]string, body any, want int, out any) error {
	base, err := c.base()
	if err != nil {
		return err
	}
	bound := r
	if values != nil {
		if bound, err = r.Bind(values); err != nil {
			return &InvalidIDError{ID: values["id"], Err: err}
		}
	}
	u := *base
	u.Path, u.RawPath = "", ""
	// The bound URI is an escaped path; parsing it keeps its escapes
	// (%20, %25, ...) as they are.
	p, err := url.Parse(bound.ServicePath())
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", r, err)
	}
	u.Path, u.RawPath = p.Path, p.RawPath

	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("catalog: %s: %w", r, err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequestWithContext(ctx, r.Method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("catalog: %s: %w", r, err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		// The url.Error's text repeats the upstream URL; keep its cause,
		// which is what the transport (authz, the network, ctx) said.
		if ue := (*url.Error)(nil); errors.As(err, &ue) {
			err = ue.Err
		}
		return fmt.Errorf("catalog: %s: %w", r, err)
	}
	defer resp.Body.Close()
	lr := io.LimitReader(resp.Body, maxResponseBytes)
	defer io.Copy(io.Discard, lr) // let the connection be reused

	if resp.StatusCode != want {
		var eb errorBody
		_ = json.NewDecoder(lr).Decode(&eb)
		if resp.StatusCode == http.StatusNotFound && eb.Error.Code == CodeNotFound && values["id"] != "" {
			return &NotFoundError{ID: values["id"]}
		}
		return &APIError{Status: resp.StatusCode, Code: eb.Error.Code, Message: eb.Error.Message}
	}
	if out == nil {
		return nil
	}
	if err := json.NewDecoder(lr).Decode(out); err != nil {
		return fmt.Errorf("catalog: %s: decoding the response: %w", r, err)
	}
	return nil
}

// base parses and checks BaseURL.
func (c *Client) base() (*url.URL, error) {
	u, err := url.Parse(c.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("catalog: BaseURL: %w", err)
	}
	if err := CheckBaseURL(u); err != nil {
		return nil, err
	}
	return u, nil
}

// CheckBaseURL reports whether u can be a [Client]'s BaseURL: an http or
// https origin with a host and no path, query, fragment or user info.
func CheckBaseURL(u *url.URL) error {
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("catalog: base URL %q: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("catalog: base URL %q: missing host", u.Redacted())
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return fmt.Errorf("catalog: base URL %q: must be an origin without path, query or fragment (request paths are the routes' own)", u.Redacted())
	case u.User != nil:
		return fmt.Errorf("catalog: base URL %q: must not carry credentials (the caller's bearer is forwarded)", u.Redacted())
	}
	return nil
}
