package openapistub

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/legacy"

	"github.com/toolroute/toolroute/internal/testing/schemavalue"
)

// maxBody bounds the request bodies a stub reads.
const maxBody = 16 << 20

// validation are the options of every validation of a document: its
// examples are not held to its schemas (published documents' often are
// not valid; the stub checks an example before it answers with it).
var validation = []openapi3.ValidationOption{openapi3.DisableExamplesValidation()}

// Load reads the OpenAPI document at path (JSON or YAML; gzip-compressed
// if the name ends in ".gz"), resolves its internal references and
// validates it, examples aside. It returns the document and its
// uncompressed bytes.
func Load(path string) (*openapi3.T, []byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	if strings.HasSuffix(path, ".gz") {
		zr, err := gzip.NewReader(bytes.NewReader(data))
		if err != nil {
			return nil, nil, fmt.Errorf("openapistub: %s: %w", path, err)
		}
		if data, err = io.ReadAll(zr); err != nil {
			return nil, nil, fmt.Errorf("openapistub: %s: %w", path, err)
		}
	}
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(data)
	if err != nil {
		return nil, nil, fmt.Errorf("openapistub: %s: %w", path, err)
	}
	if err := doc.Validate(loader.Context, validation...); err != nil {
		return nil, nil, fmt.Errorf("openapistub: %s is not a valid OpenAPI document: %w", path, err)
	}
	return doc, data, nil
}

// BasePath returns the path of the document's first server URL, its
// variables replaced by their defaults and without a trailing "/": "/v1"
// for "http://petstore.swagger.io/v1", "/ds-api" for
// "{scheme}://developer.uspto.gov/ds-api", "" for no servers or a server
// at the root.
func BasePath(doc *openapi3.T) (string, error) {
	if len(doc.Servers) == 0 || doc.Servers[0] == nil {
		return "", nil
	}
	srv := doc.Servers[0]
	raw := srv.URL
	for _, name := range slices.Sorted(maps.Keys(srv.Variables)) {
		if v := srv.Variables[name]; v != nil {
			raw = strings.ReplaceAll(raw, "{"+name+"}", v.Default)
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("openapistub: server URL %q: %w", srv.URL, err)
	}
	return strings.TrimSuffix(u.EscapedPath(), "/"), nil
}

// Options tune a [Stub]. The zero value serves the document at its own
// base path.
type Options struct {
	// BasePath is the path the document's paths are served under: ""
	// selects the document's own ([BasePath]); "/" the root.
	BasePath string
}

// Operation is one operation of the document, as the stub serves it.
type Operation struct {
	// ID is the operation's operationId, or "METHOD PATH" without one.
	ID string
	// Method is upper case; Path the path as the document writes it
	// ("/pets/{petId}"); Route the path the stub serves it at, under the
	// base path ("/v1/pets/{petId}"), without the "#fragment" some
	// documents add to a path to tell several operations of one method
	// apart ("/files/{file_id}#add_shared_link").
	Method, Path, Route string
	// Op is the operation itself; Params its parameters and its path
	// item's, the operation's overriding a path item's of the same name
	// and location, in the document's order.
	Op     *openapi3.Operation
	Params []*openapi3.Parameter
	// Response is what the stub answers a request that conforms.
	Response Response

	item *openapi3.PathItem // the path item of Op
}

// Response is a stub's answer: a status, and a body with its content
// type unless the document gives none.
type Response struct {
	Status      int
	ContentType string
	Body        []byte
}

// Request is a request as the stub received it.
type Request struct {
	// Operation is the ID of the operation it matched ("" for none);
	// Alike the IDs of every operation of the same method and route (of
	// paths told apart by a "#fragment" only), sorted, Operation among
	// them, or nil if there is no other. Of operations alike, a request
	// matches the first (by ID) that it conforms to.
	Operation string
	Alike     []string
	// Method; Path is the escaped path exactly as sent (the request
	// target before "?"), RawQuery the query exactly as sent.
	Method, Path, RawQuery string
	// Header holds the operation's header parameters that the request
	// carried, by canonical name; nil for none.
	Header http.Header
	// ContentType is the Content-Type header, Body the body's bytes.
	ContentType string
	Body        []byte
	// Problem says why the request is not one the document allows (no
	// operation, a missing parameter, a body its schema refuses, ...):
	// the stub answered it 404 or 400. "" for a request that conforms.
	Problem string
}

// Stub serves a document's operations. Its methods are safe for
// concurrent use. It must be created with [New] or [Start].
type Stub struct {
	doc    *openapi3.T
	base   string
	ops    []*Operation
	byOp   map[*openapi3.Operation]*Operation
	alike  map[*Operation][]*Operation // the operations of one method and route, by ID
	router routers.Router

	mu        sync.Mutex
	requests  []Request
	preferred string // the operation ID [Stub.Prefer] set
}

// Prefer makes the stub match a request of several operations alike
// (told apart by a "#fragment" only) to the operation id first, if the
// request conforms to it, and answer as that operation: what the
// upstream that tells them apart by the request's content does. A test
// calling a tool sets its operation; "" restores the order by ID.
func (s *Stub) Prefer(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.preferred = id
}

// New returns a stub for doc (as [Load] returns it), or an error naming
// each operation it cannot answer validly.
func New(doc *openapi3.T, opts Options) (*Stub, error) {
	base := opts.BasePath
	if base == "" {
		var err error
		if base, err = BasePath(doc); err != nil {
			return nil, err
		}
	}
	base = strings.TrimSuffix(base, "/")
	s := &Stub{doc: doc, base: base, byOp: map[*openapi3.Operation]*Operation{}, alike: map[*Operation][]*Operation{}}
	// The router matches paths under the base path (ServeHTTP strips
	// it), without fragments: no servers, no path item servers, and one
	// path item for each path told apart by fragments only, holding the
	// first operation of each method.
	routed := *doc
	routed.Servers = nil
	items := map[string]*openapi3.PathItem{}
	byRoute := map[string][]*Operation{} // by "METHOD ROUTE"
	var errs []error
	if doc.Paths != nil {
		for _, p := range doc.Paths.InMatchingOrder() {
			item := doc.Paths.Value(p)
			stripped, _, _ := strings.Cut(p, "#")
			merged := items[stripped]
			if merged == nil {
				merged = &openapi3.PathItem{}
				items[stripped] = merged
			}
			for _, prm := range item.Parameters {
				if prm != nil && prm.Value != nil && merged.Parameters.GetByInAndName(prm.Value.In, prm.Value.Name) == nil {
					merged.Parameters = append(merged.Parameters, prm)
				}
			}
			for _, method := range slices.Sorted(maps.Keys(item.Operations())) {
				op := item.Operations()[method]
				o := &Operation{ID: op.OperationID, Method: method, Path: p, Route: base + stripped, Op: op, Params: params(item, op), item: item}
				if o.ID == "" {
					o.ID = method + " " + p
				}
				var err error
				if o.Response, err = s.answer(op); err != nil {
					errs = append(errs, fmt.Errorf("operation %s: %w", o.ID, err))
				}
				s.ops = append(s.ops, o)
				s.byOp[op] = o
				key := method + " " + o.Route
				byRoute[key] = append(byRoute[key], o)
				if merged.GetOperation(method) == nil || !strings.Contains(p, "#") && strings.Contains(s.byOp[merged.GetOperation(method)].Path, "#") {
					merged.SetOperation(method, op)
				}
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("openapistub: %w", err)
	}
	for _, ops := range byRoute {
		if len(ops) > 1 {
			slices.SortFunc(ops, func(a, b *Operation) int { return strings.Compare(a.ID, b.ID) })
			for _, o := range ops {
				s.alike[o] = ops
			}
		}
	}
	paths := openapi3.NewPaths()
	for p, item := range items {
		paths.Set(p, item)
	}
	routed.Paths = paths
	r, err := legacy.NewRouter(&routed, validation...)
	if err != nil {
		return nil, fmt.Errorf("openapistub: router: %w", err)
	}
	s.router = r
	slices.SortFunc(s.ops, func(a, b *Operation) int {
		if c := strings.Compare(a.Path, b.Path); c != 0 {
			return c
		}
		return strings.Compare(a.Method, b.Method)
	})
	return s, nil
}

// Start starts a stub for doc on 127.0.0.1 (stopped when tb ends) and
// returns it and its origin ("http://127.0.0.1:PORT").
func Start(tb testing.TB, doc *openapi3.T, opts Options) (*Stub, string) {
	tb.Helper()
	s, err := New(doc, opts)
	if err != nil {
		tb.Fatal(err)
	}
	srv := httptest.NewServer(s)
	tb.Cleanup(srv.Close)
	return s, srv.URL
}

// params returns an operation's parameters: its path item's, then its
// own, an operation's replacing the path item's of the same name and
// location.
func params(item *openapi3.PathItem, op *openapi3.Operation) []*openapi3.Parameter {
	var out []*openapi3.Parameter
	for _, r := range item.Parameters {
		if r != nil && r.Value != nil {
			out = append(out, r.Value)
		}
	}
	for _, r := range op.Parameters {
		if r == nil || r.Value == nil {
			continue
		}
		p := r.Value
		if i := slices.IndexFunc(out, func(q *openapi3.Parameter) bool { return q.Name == p.Name && q.In == p.In }); i >= 0 {
			out[i] = p
			continue
		}
		out = append(out, p)
	}
	return out
}

// BasePath returns the path the stub serves the document's paths under
// ("" for the root).
func (s *Stub) BasePath() string { return s.base }

// Operations returns the document's operations, by path, then method.
func (s *Stub) Operations() []*Operation { return slices.Clone(s.ops) }

// Find returns the operations whose method is method and whose route
// has the shape of uri (a route template under the base path,
// placeholders compared by position: "/v1/pets/{id}" finds
// "/v1/pets/{petId}"): one, none, or several for paths told apart by a
// "#fragment" only.
func (s *Stub) Find(method, uri string) []*Operation {
	var out []*Operation
	for _, o := range s.ops {
		if o.Method == method && shape(o.Route) == shape(uri) {
			out = append(out, o)
		}
	}
	return out
}

// shape replaces each placeholder of a template by "{}".
func shape(path string) string {
	segs := strings.Split(path, "/")
	for i, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[i] = "{}"
		}
	}
	return strings.Join(segs, "/")
}

// Requests returns the requests received so far, in order.
func (s *Stub) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.requests)
}

// Take returns the requests received so far and forgets them.
func (s *Stub) Take() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.requests
	s.requests = nil
	return r
}

func (s *Stub) record(r Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = append(s.requests, r)
}

// ServeHTTP records r and answers it: the operation's response if r
// conforms to it, else 404 (no operation) or 400, with a JSON body
// {"message": PROBLEM}.
func (s *Stub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	rec := Request{Method: r.Method, ContentType: r.Header.Get("Content-Type"), Body: body}
	rec.Path, rec.RawQuery = target(r)
	if err != nil {
		rec.Problem = "reading the body: " + err.Error()
		s.refuse(w, rec, http.StatusBadRequest)
		return
	}
	route, vars, err := s.route(r, rec.Path)
	if err != nil {
		rec.Problem = fmt.Sprintf("no operation of the document is %s %s: %v", r.Method, rec.Path, err)
		s.refuse(w, rec, http.StatusNotFound)
		return
	}
	op := s.byOp[route.Operation]
	rec.Operation = op.ID
	var problems []string
	for _, o := range s.candidates(op) {
		route := &routers.Route{Spec: route.Spec, Path: route.Path, PathItem: o.item, Method: route.Method, Operation: o.Op}
		problem := s.validate(r, route, vars, body)
		if problem == "" {
			op, problems = o, nil
			break
		}
		problems = append(problems, problem)
	}
	rec.Operation = op.ID
	for _, o := range s.alike[op] {
		rec.Alike = append(rec.Alike, o.ID)
	}
	for _, p := range op.Params {
		if p.In != openapi3.ParameterInHeader {
			continue
		}
		if vals := r.Header.Values(p.Name); len(vals) > 0 {
			if rec.Header == nil {
				rec.Header = http.Header{}
			}
			rec.Header[http.CanonicalHeaderKey(p.Name)] = slices.Clone(vals)
		}
	}
	if len(problems) > 0 {
		rec.Problem = strings.Join(problems, "; or, as another operation of the same route: ")
		s.refuse(w, rec, http.StatusBadRequest)
		return
	}
	s.record(rec)
	if op.Response.ContentType != "" {
		w.Header().Set("Content-Type", op.Response.ContentType)
	}
	if op.Response.Body != nil {
		w.Header().Set("Content-Length", strconv.Itoa(len(op.Response.Body)))
	}
	w.WriteHeader(op.Response.Status)
	w.Write(op.Response.Body)
}

// candidates returns the operations a request the router matched to op
// may be for: op alone, or every operation alike, by ID, the one
// [Stub.Prefer] set first.
func (s *Stub) candidates(op *Operation) []*Operation {
	alike := s.alike[op]
	if alike == nil {
		return []*Operation{op}
	}
	s.mu.Lock()
	preferred := s.preferred
	s.mu.Unlock()
	if i := slices.IndexFunc(alike, func(o *Operation) bool { return o.ID == preferred }); i > 0 {
		out := append([]*Operation{alike[i]}, alike[:i]...)
		return append(out, alike[i+1:]...)
	}
	return alike
}

// route finds the operation of a request whose escaped path is path.
// The router sees the escaped path, so that an escaped "/" stays inside
// its segment; path parameters come out escaped.
func (s *Stub) route(r *http.Request, path string) (*routers.Route, map[string]string, error) {
	rest, ok := strings.CutPrefix(path, s.base)
	if !ok || !strings.HasPrefix(rest, "/") {
		return nil, nil, fmt.Errorf("not under the base path %q", s.base+"/")
	}
	r2 := r.Clone(r.Context())
	r2.URL.Path, r2.URL.RawPath = rest, ""
	return s.router.FindRoute(r2)
}

func (s *Stub) refuse(w http.ResponseWriter, rec Request, status int) {
	s.record(rec)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": rec.Problem})
}

// target returns the escaped path and the raw query of r exactly as the
// client sent them.
func target(r *http.Request) (path, query string) {
	t := r.RequestURI
	if !strings.HasPrefix(t, "/") {
		// An absolute-form target (a request through a proxy).
		if u, err := url.Parse(t); err == nil {
			return u.EscapedPath(), u.RawQuery
		}
	}
	path, query, _ = strings.Cut(t, "?")
	return path, query
}

// validate checks r against its route's operation, and returns why it
// does not conform, or "".
func (s *Stub) validate(r *http.Request, route *routers.Route, vars map[string]string, body []byte) string {
	decoded := make(map[string]string, len(vars))
	for k, v := range vars {
		d, err := url.PathUnescape(v)
		if err != nil {
			return fmt.Sprintf("path parameter %s: %v", k, err)
		}
		decoded[k] = d
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	opts := &openapi3filter.Options{
		AuthenticationFunc:      openapi3filter.NoopAuthenticationFunc,
		MultiError:              true,
		SchemaValidationOptions: []openapi3.SchemaValidationOption{openapi3.EnableFormatValidation()},
	}
	if s.doc.IsOpenAPI31OrLater() {
		opts.SchemaValidationOptions = append(opts.SchemaValidationOptions, openapi3.EnableJSONSchema2020())
	}
	// The reason and where, without the schema and value dumps.
	opts.WithCustomSchemaErrorFunc(func(err *openapi3.SchemaError) string {
		if p := err.JSONPointer(); len(p) > 0 {
			return "at /" + strings.Join(p, "/") + ": " + err.Reason
		}
		return err.Reason
	})
	err := openapi3filter.ValidateRequest(r.Context(), &openapi3filter.RequestValidationInput{
		Request:    r2,
		PathParams: decoded,
		Route:      route,
		Options:    opts,
	})
	if err != nil {
		return err.Error()
	}
	return ""
}

// answer makes the response to op: its first 2xx (an explicit code
// before a 2XX range), or 204 where the document gives none.
func (s *Stub) answer(op *openapi3.Operation) (Response, error) {
	if op.Responses == nil {
		return Response{Status: http.StatusNoContent}, nil
	}
	code, status := "", 0
	for c := range op.Responses.Map() {
		n, err := strconv.Atoi(c)
		switch {
		case err == nil && n >= 200 && n < 300:
		case strings.EqualFold(c, "2XX"):
			n = 299 // after every explicit code; answered as 200
		default:
			continue
		}
		if status == 0 || n < status {
			code, status = c, n
		}
	}
	if status == 0 {
		return Response{Status: http.StatusNoContent}, nil
	}
	if status == 299 {
		status = http.StatusOK
	}
	ref := op.Responses.Value(code)
	if ref == nil || ref.Value == nil || len(ref.Value.Content) == 0 || status == http.StatusNoContent {
		return Response{Status: status}, nil
	}
	name, mt := media(ref.Value.Content)
	if isJSON(name) {
		v, err := s.jsonValue(mt)
		if err != nil {
			return Response{}, fmt.Errorf("response %s %s: %w", code, name, err)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return Response{}, err
		}
		if strings.Contains(name, "*") {
			name = "application/json"
		}
		return Response{Status: status, ContentType: name, Body: b}, nil
	}
	body := []byte("stub")
	if text, ok := mt.Example.(string); ok {
		body = []byte(text)
	}
	if strings.Contains(name, "*") {
		name = "application/octet-stream"
	}
	return Response{Status: status, ContentType: name, Body: body}, nil
}

// media picks the media type to answer with: application/json, else a
// JSON one ("+json"), else the first by name.
func media(content openapi3.Content) (string, *openapi3.MediaType) {
	names := slices.Sorted(maps.Keys(content))
	for _, n := range names {
		if mediaType(n) == "application/json" {
			return n, content[n]
		}
	}
	for _, n := range names {
		if isJSON(n) {
			return n, content[n]
		}
	}
	return names[0], content[names[0]]
}

// mediaType returns the media type of a content type, parameters left
// out, in lower case.
func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return strings.ToLower(strings.TrimSpace(ct))
	}
	return mt
}

// isJSON reports whether the content type is JSON's (or a wildcard a
// JSON body satisfies).
func isJSON(ct string) bool {
	mt := mediaType(ct)
	return mt == "application/json" || strings.HasSuffix(mt, "+json") || mt == "*/*" || mt == "application/*"
}

// jsonValue returns a value valid for mt's schema: its example, one of
// its named examples (by name), the schema's example, or one made for
// the schema (with optional properties, else without) — each only if
// kin-openapi's validator accepts it.
func (s *Stub) jsonValue(mt *openapi3.MediaType) (any, error) {
	var schema *openapi3.Schema
	if mt != nil && mt.Schema != nil {
		schema = mt.Schema.Value
	}
	check := func(v any) error {
		if schema == nil {
			return nil
		}
		opts := []openapi3.SchemaValidationOption{openapi3.VisitAsResponse(), openapi3.EnableFormatValidation()}
		if s.doc.IsOpenAPI31OrLater() {
			opts = append(opts, openapi3.EnableJSONSchema2020())
		}
		return schema.VisitJSON(v, opts...)
	}
	var examples []any
	if mt != nil {
		examples = append(examples, mt.Example)
		for _, name := range slices.Sorted(maps.Keys(mt.Examples)) {
			if ex := mt.Examples[name]; ex != nil && ex.Value != nil {
				examples = append(examples, ex.Value.Value)
			}
		}
	}
	if schema != nil {
		examples = append(examples, schema.Example)
	}
	for _, ex := range examples {
		if ex == nil {
			continue
		}
		if v, err := normalize(ex); err == nil && check(v) == nil {
			return v, nil
		}
	}
	if schema == nil {
		return map[string]any{}, nil
	}
	js, err := JSONSchema(mt.Schema, InResponse)
	if err != nil {
		return nil, err
	}
	var errs []error
	for _, optional := range []bool{true, false} {
		v, err := schemavalue.Generate(js, schemavalue.Options{Optional: optional})
		if err == nil {
			if err = check(v); err != nil {
				err = fmt.Errorf("kin-openapi refuses %s: %w", schemavalue.Brief(v), err)
			}
		}
		if err == nil {
			return v, nil
		}
		errs = append(errs, err)
	}
	return nil, errors.Join(errs...)
}

// normalize returns v as encoding/json decodes it (float64 numbers,
// map[string]any objects).
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	err = json.Unmarshal(b, &out)
	return out, err
}
