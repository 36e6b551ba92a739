package upstream_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

type item struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Quantity int    `json:"quantity"`
}

type itemList struct {
	Items []item `json:"items" in:"body"`
}

// TestAnswers: what a 2xx answer gives: its JSON decoded into Out, the
// zero Out for 204 and an empty body, a whole list into Out's in:"body"
// field; +json content types are JSON.
func TestAnswers(t *testing.T) {
	tests := []struct {
		name   string
		answer http.HandlerFunc
		want   map[string]any
	}{
		{"200 JSON", answerJSON(200, `{"id": "i1", "name": "n", "quantity": 3, "extra": true}`), map[string]any{"id": "i1", "name": "n", "quantity": 3.0}},
		{"201 JSON with a charset", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json; charset=utf-8")
			w.WriteHeader(201)
			io.WriteString(w, `{"id": "i2", "name": "n", "quantity": 0}`)
		}, map[string]any{"id": "i2", "name": "n", "quantity": 0.0}},
		{"+json", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/vnd.things+json")
			io.WriteString(w, `{"id": "i3", "name": "n", "quantity": 1}`)
		}, map[string]any{"id": "i3", "name": "n", "quantity": 1.0}},
		{"204", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(204) }, map[string]any{"id": "", "name": "", "quantity": 0.0}},
		{"200 empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(200) }, map[string]any{"id": "", "name": "", "quantity": 0.0}},
		{"200 white space, no content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, " \n")
		}, map[string]any{"id": "", "name": "", "quantity": 0.0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.answer)
			d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
			route := svc("GET", "/items/{id}")
			cs := serve(t, d, authz.Caller{}, forwarding("get", route, upstream.Forward[*deps, getArgs, item](route)))
			text, isErr, got := callTool(t, cs, "get", map[string]any{"id": "x"})
			if isErr {
				t.Fatalf("error %q", text)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
		})
	}

	t.Run("a list into in:body", func(t *testing.T) {
		rec := newRecorder(t, answerJSON(200, `[{"id": "a", "name": "A", "quantity": 1}, {"id": "b", "name": "B", "quantity": 2}]`))
		d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
		route := svc("GET", "/items")
		cs := serve(t, d, authz.Caller{}, forwarding("list", route, upstream.Forward[*deps, struct{}, itemList](route)))
		text, isErr, got := callTool(t, cs, "list", map[string]any{})
		want := map[string]any{"items": []any{
			map[string]any{"id": "a", "name": "A", "quantity": 1.0},
			map[string]any{"id": "b", "name": "B", "quantity": 2.0},
		}}
		if diff := cmp.Diff(want, got); isErr || diff != "" {
			t.Errorf("error %v %q; result (-want +got):\n%s", isErr, text, diff)
		}
		// Call decodes a list into a slice Out, and into a pointer's field.
		items, err := upstream.Call[[]item](context.Background(), d, route, nil)
		if err != nil || len(items) != 2 || items[1].ID != "b" {
			t.Errorf("Call[[]item] = %+v, %v", items, err)
		}
		pl, err := upstream.Call[*itemList](context.Background(), d, route, nil)
		if err != nil || pl == nil || len(pl.Items) != 2 {
			t.Errorf("Call[*itemList] = %+v, %v", pl, err)
		}
	})
}

// TestErrorAnswers: a non-2xx answer is an *upstream.Error; its client
// text is the status and the upstream's own message from the body's
// common JSON shapes, cleaned and truncated, and never shows the URL.
func TestErrorAnswers(t *testing.T) {
	long := strings.Repeat("é", 400) // 800 bytes
	tests := []struct {
		name       string
		answer     http.HandlerFunc
		status     int
		code, text string // Error.Code, and the client's text
	}{
		{"nested error object", answerJSON(404, `{"error": {"code": "not_found", "message": "item \"x\" not found"}}`),
			404, "not_found", `upstream answered 404 Not Found: item "x" not found`},
		{"message", answerJSON(401, `{"message": "Bad credentials", "documentation_url": "https://docs.example/x"}`),
			401, "", `upstream answered 401 Unauthorized: Bad credentials`},
		{"OAuth", answerJSON(401, `{"error": "invalid_token", "error_description": "The access token expired"}`),
			401, "invalid_token", `upstream answered 401 Unauthorized: The access token expired`},
		{"error string", answerJSON(500, `{"error": "boom", "code": 17}`),
			500, "17", `upstream answered 500 Internal Server Error: boom`},
		{"problem details", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/problem+json")
			w.WriteHeader(403)
			io.WriteString(w, `{"type": "https://example.com/probs/out-of-credit", "title": "You do not have enough credit.", "detail": "Your current balance is 30, but that costs 50."}`)
		}, 403, "", `upstream answered 403 Forbidden: Your current balance is 30, but that costs 50.`},
		{"problem title only", answerJSON(409, `{"type": "about:blank", "title": "Conflict", "status": 409}`),
			409, "", `upstream answered 409 Conflict: Conflict`},
		{"errors list", answerJSON(422, `{"errors": [{"code": "blank", "detail": "name is blank"}, {"message": "second"}]}`),
			422, "blank", `upstream answered 422 Unprocessable Entity: name is blank`},
		{"FastAPI validation", answerJSON(422, `{"detail": [{"loc": ["body", "name"], "msg": "field required", "type": "value_error.missing"}]}`),
			422, "", `upstream answered 422 Unprocessable Entity: field required`},
		{"JSON without a message", answerJSON(400, `{"ok": false}`),
			400, "", `upstream answered 400 Bad Request`},
		{"JSON without a content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			w.WriteHeader(400)
			io.WriteString(w, ` {"message": "bad"}`)
		}, 400, "", `upstream answered 400 Bad Request: bad`},
		{"HTML", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(502)
			io.WriteString(w, `<html><body>{"message": "not read"}</body></html>`)
		}, 502, "", `upstream answered 502 Bad Gateway`},
		{"plain text", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "upstream exploded", 500) },
			500, "", `upstream answered 500 Internal Server Error`},
		{"unknown status", answerJSON(599, `{"message": "odd"}`),
			599, "", `upstream answered 599: odd`},
		{"redirect without a location", answerJSON(304, ``),
			304, "", `upstream answered 304 Not Modified`},
		{"control characters", answerJSON(400, `{"message": "line one\nline two\u0000\u2028end"}`),
			400, "", `upstream answered 400 Bad Request: line one line two  end`},
		{"long message", answerJSON(400, `{"message": "`+long+`"}`),
			400, "", `upstream answered 400 Bad Request: ` + long[:512] + `…(truncated, 800 bytes)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.answer)
			route := svc("GET", "/items/{id}")
			d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
			cs := serve(t, d, authz.Caller{}, forwarding("get", route, upstream.Forward[*deps, getArgs, item](route)))
			text, isErr, _ := callTool(t, cs, "get", map[string]any{"id": "x"})
			if !isErr || text != tt.text {
				t.Errorf("error %v, text\n%q\nwant\n%q", isErr, text, tt.text)
			}
			host := strings.TrimPrefix(rec.url, "http://")
			if strings.Contains(text, host) || strings.Contains(text, "/items/") {
				t.Errorf("the client text %q shows the request's URL", text)
			}

			_, err := upstream.Call[item](context.Background(), d, route, getArgs{"x"})
			var ue *upstream.Error
			if !errors.As(err, &ue) {
				t.Fatalf("Call: %v (%T), want an *upstream.Error", err, err)
			}
			if ue.Status != tt.status || ue.Code != tt.code || ue.Route != route || ue.ClientText() != tt.text {
				t.Errorf("Error = %+v (client text %q), want status %d, code %q, route %v", ue, ue.ClientText(), tt.status, tt.code, route)
			}
			if want := "upstream GET /svc/items/{id}: " + strings.TrimPrefix(tt.text, "upstream answered "); err.Error() != want {
				t.Errorf("Error() = %q, want %q", err.Error(), want)
			}
		})
	}
}

// TestErrorMessageHidesCredentials: an upstream message that echoes the
// Authorization header the request carried (the caller's bearer, added
// by authz's transport) comes back without it, with or without its
// "Bearer" prefix, and so does any other "Bearer TOKEN".
func TestErrorMessageHidesCredentials(t *testing.T) {
	rec := newRecorder(t, func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(500)
		fmt.Fprintf(w, `{"error": {"message": "request failed: Authorization: %s; token %s; other bearer abc.def"}}`, auth, strings.TrimPrefix(auth, "Bearer "))
	})
	route := svc("GET", "/items/{id}")
	client := &http.Client{Transport: authz.Transport(nil, "svc", rec.url, authz.AllowAll(), authz.Options{})}
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url, Client: client}}}
	cs := serve(t, d, authz.Caller{Subject: "alice", Bearer: "s3cr3t-t0ken"}, forwarding("get", route, upstream.Forward[*deps, getArgs, item](route)))
	text, isErr, _ := callTool(t, cs, "get", map[string]any{"id": "x"})
	want := "upstream answered 500 Internal Server Error: request failed: Authorization: [redacted]; token [redacted]; other bearer [redacted]"
	if !isErr || text != want {
		t.Errorf("error %v, text\n%q\nwant\n%q", isErr, text, want)
	}
	if got := rec.requests(); len(got) != 1 || got[0].Header.Get("Authorization") != "Bearer s3cr3t-t0ken" {
		t.Errorf("the upstream received %+v, want the caller's bearer", got)
	}
}

// TestInvalidAnswers: a 2xx answer that is not JSON, too long or does
// not decode fails the call with a fixed text, the cause logged; one of
// exactly MaxResponseBytes decodes.
func TestInvalidAnswers(t *testing.T) {
	big := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			// {"id": "xxx...", "name": "", "quantity": 0} of n bytes.
			head, tail := `{"id": "`, `", "name": "", "quantity": 0}`
			io.WriteString(w, head+strings.Repeat("x", n-len(head)-len(tail))+tail)
		}
	}
	tests := []struct {
		name   string
		answer http.HandlerFunc
		cause  string // in the log
	}{
		{"HTML", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			io.WriteString(w, `{"id": "x"}`)
		}, `the answer's content type is \"text/html\"`},
		{"no content type", func(w http.ResponseWriter, r *http.Request) {
			w.Header()["Content-Type"] = nil
			io.WriteString(w, `{"id": "x"}`)
		}, `the answer's content type is \"\"`},
		{"truncated JSON", answerJSON(200, `{"id": "x`), "decoding the answer"},
		{"wrong shape", answerJSON(200, `{"id": 42}`), "decoding the answer"},
		{"a list for an object", answerJSON(200, `[{"id": "x"}]`), "decoding the answer"},
		{"trailing data", answerJSON(200, `{"id": "x"} {"id": "y"}`), "decoding the answer"},
		{"one byte too long", big(upstream.MaxResponseBytes + 1), "the answer exceeds 16777216 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newRecorder(t, tt.answer)
			log, buf := logs()
			d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}, log: log}
			route := svc("GET", "/items/{id}")
			cs := serve(t, d, authz.Caller{}, forwarding("get", route, upstream.Forward[*deps, getArgs, item](route)))
			text, isErr, _ := callTool(t, cs, "get", map[string]any{"id": "x"})
			if !isErr || text != "upstream sent an invalid response" {
				t.Errorf("error %v, text %q; want upstream sent an invalid response", isErr, text)
			}
			if !strings.Contains(buf.String(), tt.cause) || !strings.Contains(buf.String(), "tool=get") || !strings.Contains(buf.String(), `route="GET /svc/items/{id}"`) {
				t.Errorf("the log does not hold the cause %q, the tool and the route:\n%s", tt.cause, buf)
			}
		})
	}
	t.Run("exactly the bound", func(t *testing.T) {
		rec := newRecorder(t, big(upstream.MaxResponseBytes))
		d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url}}}
		it, err := upstream.Call[item](context.Background(), d, svc("GET", "/items/{id}"), getArgs{"x"})
		if err != nil || len(it.ID) < upstream.MaxResponseBytes-64 {
			t.Errorf("an answer of MaxResponseBytes: id of %d bytes, %v", len(it.ID), err)
		}
	})
}

// TestDeadUpstream: an upstream that refuses connections fails the call
// with "upstream unavailable", the cause logged, and the session goes
// on.
func TestDeadUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	ln.Close() // connection refused from now on
	log, buf := logs()
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: origin}}, log: log}
	route := svc("GET", "/items/{id}")
	cs := serve(t, d, authz.Caller{}, forwarding("get", route, upstream.Forward[*deps, getArgs, item](route)))
	for range 2 {
		text, isErr, _ := callTool(t, cs, "get", map[string]any{"id": "x"})
		if !isErr || text != "upstream unavailable" {
			t.Errorf("error %v, text %q; want upstream unavailable", isErr, text)
		}
	}
	if n := strings.Count(buf.String(), "upstream: request failed"); n != 2 || !strings.Contains(buf.String(), "connection refused") {
		t.Errorf("want 2 logged causes, connection refused:\n%s", buf)
	}
	_, err = upstream.Call[item](context.Background(), d, route, getArgs{"x"})
	var op *net.OpError
	if err == nil || err.Error() != "upstream unavailable" || !errors.As(err, &op) {
		t.Errorf("Call: %v; want upstream unavailable, its cause in the chain", err)
	}
}

// TestCancelledCall: the call's own cancellation, while the upstream
// holds the request, ends Call with the context's error itself, not
// "upstream unavailable", and logs nothing.
func TestCancelledCall(t *testing.T) {
	arrived := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-r.Context().Done() // until the client goes
	}))
	t.Cleanup(srv.Close)
	log, buf := logs()
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: srv.URL}}, log: log}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := upstream.Call[item](ctx, d, svc("GET", "/items/{id}"), getArgs{"x"})
		done <- err
	}()
	await.Recv(t, arrived, "the request")
	cancel()
	if err := await.Recv(t, done, "Call's end"); err != context.Canceled {
		t.Errorf("Call after its context's cancellation: %v (%T), want context.Canceled itself", err, err)
	}
	if buf.String() != "" {
		t.Errorf("a cancellation was logged:\n%s", buf)
	}
	// Cancelled before sending: the same.
	if _, err := upstream.Call[item](ctx, d, svc("GET", "/items/{id}"), getArgs{"x"}); err != context.Canceled {
		t.Errorf("Call with a cancelled context: %v", err)
	}
}

// TestRefusedByAuthz: a request authz's upstream transport refuses (a
// real Policy that lets viewers read only) is never sent, and the
// client sees authz's own text, not "upstream unavailable"; the
// refusal's error stays in the chain.
func TestRefusedByAuthz(t *testing.T) {
	policy := authz.MustParsePolicy([]byte(`[{"role": "viewer", "accessPolicies": [
		{"path": "^/svc/items(/[^/]+)?$", "methods": ["GET"], "effect": "allow"}]}]`))
	rec := newRecorder(t, nil)
	log, buf := logs()
	client := &http.Client{Transport: authz.Transport(nil, "svc", rec.url, policy, authz.Options{Logger: log})}
	d := &deps{Endpoints: upstream.Endpoints{"svc": {Origin: rec.url, Client: client}}, log: log}
	get, del := svc("GET", "/items/{id}"), svc("DELETE", "/items/{id}")
	tools := []tool.Tool[*deps]{
		forwarding("get", get, upstream.Forward[*deps, getArgs, okResult](get)),
		forwarding("delete", del, upstream.Forward[*deps, getArgs, okResult](del)),
	}
	tests := []struct {
		caller authz.Caller
		tool   string
		want   string
	}{
		{authz.Caller{Subject: "vic", Roles: []string{"viewer"}}, "delete", "not authorized (insufficient_scope)"},
		{authz.Caller{Subject: "mallory", Roles: []string{"intruder"}}, "get", "not authorized (insufficient_scope)"},
		{authz.Caller{}, "get", "not authenticated"},
	}
	for _, tt := range tests {
		cs := serve(t, d, tt.caller, tools...)
		text, isErr, _ := callTool(t, cs, tt.tool, map[string]any{"id": "x"})
		if !isErr || text != tt.want {
			t.Errorf("%s as %v: error %v, text %q; want %q", tt.tool, tt.caller, isErr, text, tt.want)
		}
	}
	if got := rec.requests(); len(got) != 0 {
		t.Errorf("the upstream received %+v, want nothing", got)
	}
	if strings.Contains(buf.String(), "upstream: request failed") {
		t.Errorf("a refusal was logged as an upstream failure:\n%s", buf)
	}
	// Outside a tool call the transport refuses too; Call's error
	// wraps its refusal.
	_, err := upstream.Call[okResult](context.Background(), d, get, getArgs{"x"})
	var denied *authz.DeniedError
	if !errors.As(err, &denied) || err.Error() != "upstream GET /svc/items/{id}: not authorized (insufficient_scope)" {
		t.Errorf("Call outside a tool call: %v, want authz's refusal in the chain", err)
	}
	// The viewer reads.
	cs := serve(t, d, authz.Caller{Subject: "vic", Roles: []string{"viewer"}}, tools...)
	if text, isErr, _ := callTool(t, cs, "get", map[string]any{"id": "x"}); isErr {
		t.Errorf("viewer get: %q", text)
	}
}
