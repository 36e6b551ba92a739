package upstream_test

import (
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/behaviour"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// The In types of the registration cases: each breaks one rule.
type (
	floatPath struct {
		ID float64 `json:"id"`
	}
	pointerPath struct {
		ID *string `json:"id"`
	}
	pathNotPlaceholder struct {
		ID  string `json:"id"`
		Rev string `json:"rev" in:"path"`
	}
	queryPlaceholder struct {
		ID string `json:"id" in:"query"`
	}
	bodyOnGet struct {
		ID   string `json:"id"`
		Name string `json:"name"`
		Note string `json:"note,omitempty"`
	}
	onePropOnDelete struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	wholeBodyOnDelete struct {
		ID   string `json:"id"`
		Body thing  `json:"body" in:"body"`
	}
	twoBodies struct {
		A thing `json:"a" in:"body"`
		B thing `json:"b" in:"body"`
	}
	bodyAndProps struct {
		A    thing  `json:"a" in:"body"`
		Name string `json:"name"`
	}
	unknownIn struct {
		ID    string `json:"id"`
		Token string `json:"token" in:"cookie"`
	}
	mapQuery struct {
		Filter map[string]string `json:"filter" in:"query"`
	}
	bytesQuery struct {
		Raw []byte `json:"raw" in:"query"`
	}
	authHeader struct {
		Auth string `json:"Authorization" in:"header"`
	}
	badHeaderName struct {
		X string `json:"X Request" in:"header"`
	}
	twiceQuery struct {
		A string `json:"a" in:"query"`
		B string `json:"b" in:"query"`
		C string `json:"X-A" in:"header"`
		D string `json:"x-a" in:"header"`
	}
	textBody struct {
		Text string `json:"text" in:"body,text/plain"`
	}
	mediaOnQuery struct {
		Q string `json:"q" in:"query,application/json"`
	}
	commaScalar struct {
		Q string `json:"q" in:"query,comma"`
	}
	commaPath struct {
		ID []string `json:"id" in:"path,comma"`
	}
	listOut struct {
		Items []item `json:"items" in:"body"`
		More  []item `json:"more" in:"body"`
		Next  string `json:"next" in:"query"`
	}
)

// checkAt calls r.Check(t) and returns its error and the FILE:LINE of
// the call.
func checkAt(r *registry.Registry[*deps], t tool.Tool[*deps]) (err error, site string) {
	_, file, line, _ := runtime.Caller(0)
	err = r.Check(t)
	return err, fmt.Sprintf("%s:%d", file, line+1)
}

// TestRegistrationRefuses: every mismatch of a forwarded route and its
// In (or Out) type is refused at registration, by Check and by
// Register's panic, each with its rule in Register's form.
func TestRegistrationRefuses(t *testing.T) {
	get := svc("GET", "/items/{id}")
	tests := []struct {
		name   string
		route  tool.Route // the forwarded one; VisibilityRoutes hold it unless routes is set
		h      func(tool.Route) tool.Handler[*deps]
		routes []tool.Route
		want   []string // the rules, in order
	}{
		{name: "fine", route: get, h: upstream.Forward[*deps, getArgs, item]},
		{name: "forwarded route not declared", route: get, h: upstream.Forward[*deps, getArgs, item], routes: []tool.Route{svc("GET", "/items")},
			want: []string{"the handler sends requests on GET /svc/items/{id}, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)"}},
		{name: "forwarded route declared with another placeholder name", route: get, h: upstream.Forward[*deps, getArgs, item], routes: []tool.Route{svc("GET", "/items/{item}")},
			want: []string{"the handler sends requests on GET /svc/items/{id}, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)"}},
		{name: "placeholder without a field", route: svc("GET", "/items/{id}/revisions/{rev}"), h: upstream.Forward[*deps, getArgs, item],
			want: []string{`upstream GET /svc/items/{id}/revisions/{rev}: placeholder {rev} has no field in upstream_test.getArgs: add one with json:"rev" (untagged or in:"path")`}},
		{name: "float path field", route: get, h: upstream.Forward[*deps, floatPath, item],
			want: []string{`upstream GET /svc/items/{id}: field ID of upstream_test.floatPath (json "id", in:"path"): type float64 does not format as one path segment: use a string, integer or bool type (or a named type of one)`}},
		{name: "pointer path field", route: get, h: upstream.Forward[*deps, pointerPath, item],
			want: []string{`upstream GET /svc/items/{id}: field ID of upstream_test.pointerPath (json "id", in:"path"): type *string does not format as one path segment: use a string, integer or bool type (or a named type of one)`}},
		{name: "path field the route does not name", route: get, h: upstream.Forward[*deps, pathNotPlaceholder, item],
			want: []string{`upstream GET /svc/items/{id}: field Rev of upstream_test.pathNotPlaceholder (json "rev") is in:"path", but the route has no placeholder {rev}`}},
		{name: "query field named as a placeholder", route: get, h: upstream.Forward[*deps, queryPlaceholder, item],
			want: []string{`upstream GET /svc/items/{id}: field ID of upstream_test.queryPlaceholder (json "id") is in:"query", but the route names {id} as a path placeholder: fill it with an untagged or in:"path" field`}},
		{name: "body properties on GET", route: get, h: upstream.Forward[*deps, bodyOnGet, item],
			want: []string{`upstream GET /svc/items/{id}: fields Name of upstream_test.bodyOnGet (json "name"), Note of upstream_test.bodyOnGet (json "note") would be properties of the JSON body, but a GET request carries none: tag them in:"query" or in:"header", or leave them out of upstream_test.bodyOnGet`}},
		{name: "a body property on HEAD", route: svc("HEAD", "/items/{id}"), h: upstream.Forward[*deps, createArgs, item], routes: []tool.Route{svc("HEAD", "/items/{id}")},
			want: []string{
				`upstream HEAD /svc/items/{id}: placeholder {id} has no field in upstream_test.createArgs: add one with json:"id" (untagged or in:"path")`,
				`upstream HEAD /svc/items/{id}: fields Org of upstream_test.createArgs (json "org"), Name of upstream_test.createArgs (json "name"), Quantity of upstream_test.createArgs (json "quantity"), Note of upstream_test.createArgs (json "note"), Count of upstream_test.createArgs (json "count") would be properties of the JSON body, but a HEAD request carries none: tag them in:"query" or in:"header", or leave them out of upstream_test.createArgs`,
			}},
		{name: "a whole body on GET", route: svc("GET", "/things/{id}"), h: upstream.Forward[*deps, replaceArgs, item],
			want: []string{`upstream GET /svc/things/{id}: field Thing of upstream_test.replaceArgs is in:"body", but a GET request carries none`}},
		{name: "one body property on DELETE", route: svc("DELETE", "/things/{id}"), h: upstream.Forward[*deps, onePropOnDelete, item],
			want: []string{`upstream DELETE /svc/things/{id}: field Name of upstream_test.onePropOnDelete (json "name") would be a property of the JSON body, but a DELETE request carries none: tag it in:"query" or in:"header", or leave it out of upstream_test.onePropOnDelete`}},
		{name: "whole body on DELETE", route: svc("DELETE", "/items/{id}"), h: upstream.Forward[*deps, wholeBodyOnDelete, item],
			want: []string{`upstream DELETE /svc/items/{id}: field Body of upstream_test.wholeBodyOnDelete is in:"body", but a DELETE request carries none`}},
		{name: "two body fields", route: svc("POST", "/items"), h: upstream.Forward[*deps, twoBodies, item],
			want: []string{`upstream POST /svc/items: fields A and B of upstream_test.twoBodies are both in:"body": one field is the whole body`}},
		{name: "a body field and body properties", route: svc("POST", "/items"), h: upstream.Forward[*deps, bodyAndProps, item],
			want: []string{`upstream POST /svc/items: field A of upstream_test.bodyAndProps is in:"body", the whole body, but Name would be properties of it: tag them in:"query" or in:"header", or move them into A's type`}},
		{name: "unknown in tag", route: get, h: upstream.Forward[*deps, unknownIn, item],
			want: []string{`upstream GET /svc/items/{id}: field Token of upstream_test.unknownIn has the tag in:"cookie": want in:"path", in:"query", in:"header" or in:"body" (untagged: a property of the JSON body)`}},
		{name: "a body media type that is not JSON", route: svc("POST", "/items"), h: upstream.Forward[*deps, textBody, item],
			want: []string{`upstream POST /svc/items: field Text of upstream_test.textBody has the tag in:"body,text/plain": the body's media type "text/plain" is not application/json or a +json type: the body is encoded as JSON`}},
		{name: "a media type on a query field", route: svc("GET", "/items"), h: upstream.Forward[*deps, mediaOnQuery, item],
			want: []string{`upstream GET /svc/items: field Q of upstream_test.mediaOnQuery has the tag in:"query,application/json": the one option of a query or header field is "comma" (a list sent as one comma-separated value); a media type is an in:"body" field's`}},
		{name: "comma on a field that is no list", route: svc("GET", "/items"), h: upstream.Forward[*deps, commaScalar, item],
			want: []string{`upstream GET /svc/items: field Q of upstream_test.commaScalar has the tag in:"query,comma": "comma" joins a list, and string is none: use a slice`}},
		{name: "an option on a path field", route: get, h: upstream.Forward[*deps, commaPath, item],
			want: []string{
				`upstream GET /svc/items/{id}: field ID of upstream_test.commaPath has the tag in:"path,comma": an in:"path" field takes no option`,
				`upstream GET /svc/items/{id}: placeholder {id} has no field in upstream_test.commaPath: add one with json:"id" (untagged or in:"path")`,
			}},
		{name: "map query field", route: svc("GET", "/items"), h: upstream.Forward[*deps, mapQuery, item],
			want: []string{`upstream GET /svc/items: field Filter of upstream_test.mapQuery (json "filter", in:"query"): type map[string]string does not format as a parameter value: use a string, integer, float or bool type, a type with a MarshalText method, a pointer to one, or a slice of them`}},
		{name: "bytes query field", route: svc("GET", "/items"), h: upstream.Forward[*deps, bytesQuery, item],
			want: []string{`upstream GET /svc/items: field Raw of upstream_test.bytesQuery (json "raw", in:"query"): type []uint8 does not format as a parameter value: use a string, integer, float or bool type, a type with a MarshalText method, a pointer to one, or a slice of them`}},
		{name: "a header the transport owns", route: svc("GET", "/items"), h: upstream.Forward[*deps, authHeader, item],
			want: []string{`upstream GET /svc/items: field Auth of upstream_test.authHeader: in:"header" "Authorization" is the transport's to set (it adds the caller's credentials, the body's type and the framing): leave it out`}},
		{name: "a header name that is no token", route: svc("GET", "/items"), h: upstream.Forward[*deps, badHeaderName, item],
			want: []string{`upstream GET /svc/items: field X of upstream_test.badHeaderName: in:"header" name "X Request" is not an HTTP header name (letters, digits and !#$%&'*+-.^_` + "`" + `|~)`}},
		{name: "one header twice", route: svc("GET", "/items"), h: upstream.Forward[*deps, twiceQuery, item],
			want: []string{`upstream GET /svc/items: fields C and D of upstream_test.twiceQuery both give the header "x-a"`}},
		{name: "a result's tags", route: svc("GET", "/items"), h: upstream.Forward[*deps, struct{}, listOut],
			want: []string{
				`upstream GET /svc/items: fields Items and More of the result type upstream_test.listOut are both in:"body": the answer decodes into one`,
				`upstream GET /svc/items: field Next of the result type upstream_test.listOut has the tag in:"query": a result's field may only be in:"body" (the whole answer decodes into it)`,
			}},
		{name: "invalid route", route: svc("GET", "/items/../admin"), h: upstream.Forward[*deps, struct{}, item], routes: []tool.Route{svc("GET", "/items")},
			want: []string{
				`upstream GET /svc/items/../admin: invalid route GET /svc/items/../admin: URI must not contain a ".." segment`,
				"the handler sends requests on GET /svc/items/../admin, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)",
			}},
		{name: "several at once", route: svc("GET", "/items/{id}/{rev}"), h: upstream.Forward[*deps, bodyOnGet, item], routes: []tool.Route{svc("GET", "/items/{id}")},
			want: []string{
				`upstream GET /svc/items/{id}/{rev}: placeholder {rev} has no field in upstream_test.bodyOnGet: add one with json:"rev" (untagged or in:"path")`,
				`upstream GET /svc/items/{id}/{rev}: fields Name of upstream_test.bodyOnGet (json "name"), Note of upstream_test.bodyOnGet (json "note") would be properties of the JSON body, but a GET request carries none: tag them in:"query" or in:"header", or leave them out of upstream_test.bodyOnGet`,
				"the handler sends requests on GET /svc/items/{id}/{rev}, which VisibilityRoutes does not declare: add it there (a tool's routes decide who sees it, and its upstream transport refuses every request outside them)",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			routes := tt.routes
			if routes == nil {
				routes = []tool.Route{tt.route}
			}
			tl := tool.Tool[*deps]{
				Name: "fwd", Description: "d", ServiceKey: "svc",
				VisibilityRoutes: routes,
				Behaviour:        behaviour.Destructive,
				Handler:          tt.h(tt.route),
			}
			r := registry.New[*deps]()
			err, site := checkAt(r, tl)
			prefix := fmt.Sprintf("registry: tool %q (registered at %s): ", "fwd", site)
			var got []string
			if err != nil {
				for _, line := range strings.Split(err.Error(), "\n") {
					rule, ok := strings.CutPrefix(line, prefix)
					if !ok {
						t.Errorf("line %q is not in Register's form %q…", line, prefix)
					}
					got = append(got, rule)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Check's rules (-want +got):\n%s", diff)
			}
			// Register panics with the same rules.
			msg := func() (msg string) {
				defer func() {
					if p := recover(); p != nil {
						msg = fmt.Sprint(p)
					}
				}()
				r.Register(tl)
				return ""
			}()
			if (msg == "") != (tt.want == nil) {
				t.Fatalf("Register panicked with %q", msg)
			}
			for _, rule := range tt.want {
				if !strings.Contains(msg, "): "+rule) {
					t.Errorf("Register's panic\n%s\nlacks the rule\n%s", msg, rule)
				}
			}
		})
	}
}

// TestSendingIsTheForwardedRoute: Forward's handler declares exactly the
// route it forwards to.
func TestSendingIsTheForwardedRoute(t *testing.T) {
	r := svc(http.MethodPut, "/items/{id}")
	h := upstream.Forward[*deps, getArgs, item](r)
	if diff := cmp.Diff([]tool.Route{r}, h.Sends()); diff != "" || h.Err() != nil {
		t.Errorf("Sends (-want +got):\n%s\nErr: %v", diff, h.Err())
	}
}
