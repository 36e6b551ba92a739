package authz_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/core/call"
)

func TestCallerContext(t *testing.T) {
	if _, ok := authz.CallerFromContext(context.Background()); ok {
		t.Error("a caller in the background context")
	}
	want := authz.Caller{Subject: "alice", Roles: []string{"viewer"}, Bearer: secretBearer}
	got, ok := authz.CallerFromContext(authz.WithCaller(context.Background(), want))
	if !ok || got.Subject != want.Subject || got.Bearer != want.Bearer || len(got.Roles) != 1 {
		t.Errorf("CallerFromContext = %v, %v", got, ok)
	}
	// The zero caller is a caller (unauthenticated, but present).
	if _, ok := authz.CallerFromContext(authz.WithCaller(context.Background(), authz.Caller{})); !ok {
		t.Error("the zero caller was lost")
	}
}

// TestCallerNeverRevealsBearer prints and logs a caller every way there
// is.
func TestCallerNeverRevealsBearer(t *testing.T) {
	c := authz.Caller{Subject: "alice", Roles: []string{"viewer", "editor"}, Bearer: secretBearer}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%t", "%10.3v", "%-40s", "%T"} {
		outputs = append(outputs, fmt.Sprintf(verb, c), fmt.Sprintf(verb, &c))
	}
	type wrapper struct {
		C  authz.Caller
		P  *authz.Caller
		CS []authz.Caller
	}
	w := wrapper{C: c, P: &c, CS: []authz.Caller{c}}
	outputs = append(outputs, fmt.Sprintf("%v", w), fmt.Sprintf("%+v", w), fmt.Sprintf("%#v", w), fmt.Sprint(c), fmt.Sprintln(c), c.String())
	var buf bytes.Buffer
	for _, h := range []slog.Handler{slog.NewTextHandler(&buf, nil), slog.NewJSONHandler(&buf, nil)} {
		l := slog.New(h)
		l.Info("call", "caller", c, "ptr", &c)
		l.Info("call", slog.Any("caller", c), slog.Group("g", "c", c))
		l.With("caller", c).Info("with")
	}
	log.New(&buf, "", 0).Printf("%v %+v", c, c)
	js, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, buf.String(), string(js))
	for _, out := range outputs {
		if strings.Contains(out, secretBearer) || strings.Contains(out, fmt.Sprintf("%x", secretBearer)) || strings.Contains(out, fmt.Sprintf("%X", secretBearer)) {
			t.Errorf("bearer revealed: %s", out)
		}
	}
	if got, want := c.String(), `Caller{Subject: "alice", Roles: ["viewer" "editor"], Bearer: [redacted]}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%#v", c), `authz.Caller{Subject:"alice", Roles:[]string{"viewer", "editor"}, Scopes:[]string(nil), Client:"", Actors:[]string(nil), Bearer:"[redacted]"}`; got != want {
		t.Errorf("%%#v = %s, want %s", got, want)
	}
	// An agent acting for a user: the client and the delegation chain are
	// told, the bearer never.
	agent := authz.Caller{Subject: "alice", Scopes: []string{"items:read"}, Client: "billing-agent", Actors: []string{"agent-7", "orchestrator"}, Bearer: secretBearer}
	if got, want := agent.String(), `Caller{Subject: "alice", Roles: [], Scopes: ["items:read"], Client: "billing-agent", Actors: ["agent-7" "orchestrator"], Bearer: [redacted]}`; got != want {
		t.Errorf("String() of an agent = %s, want %s", got, want)
	}
	var logged strings.Builder
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("call", "caller", agent)
	if want := `"caller":{"subject":"alice","roles":null,"scopes":["items:read"],"client":"billing-agent","actors":["agent-7","orchestrator"],"bearer":"[redacted]"}`; !strings.Contains(logged.String(), want) {
		t.Errorf("logged %s, want it to hold %s", logged.String(), want)
	}
	if got, want := fmt.Sprint(authz.Caller{Subject: "bob"}), `Caller{Subject: "bob", Roles: [], Bearer: none}`; got != want {
		t.Errorf("no bearer: %s, want %s", got, want)
	}
	// Useful information is kept.
	for _, s := range []string{"alice", "viewer", "editor", "[redacted]"} {
		if !strings.Contains(buf.String(), s) {
			t.Errorf("logs lack %q:\n%s", s, buf.String())
		}
	}
}

// TestClientError: what a typed handler shows a client of an error: an
// authorization refusal's fixed text whatever wraps it, a generic text
// for an error showing an upstream URL, else the error.
func TestClientError(t *testing.T) {
	denied := &authz.DeniedError{Reason: "secret reason"}
	outage := &authz.OutageError{Err: errors.New("dial tcp 10.0.0.1:80: refused")}
	unauth := &authz.UnauthenticatedError{Reason: "expired"}
	plain := errors.New("plain")
	tests := []struct {
		err  error
		want string
	}{
		{&url.Error{Op: "Get", URL: "http://internal:8080/api/v1/items/x", Err: denied}, "not authorized (insufficient_scope)"},
		{&url.Error{Op: "Get", URL: "http://internal:8080/", Err: outage}, "authorization service unavailable"},
		{fmt.Errorf("wrapped: %w", unauth), "not authenticated"},
		{denied, "not authorized (insufficient_scope)"},
		{&url.Error{Op: "Get", URL: "http://internal:8080/x", Err: plain}, "upstream request failed"},
		{fmt.Errorf("catalog: %w", &url.Error{Op: "Get", URL: "http://internal:8080/x", Err: plain}), "upstream request failed"},
		{plain, "plain"},
	}
	for _, tt := range tests {
		if got := call.ClientError(tt.err); got.Error() != tt.want {
			t.Errorf("ClientError(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
	if call.ClientError(nil) != nil {
		t.Error("ClientError(nil) != nil")
	}
	if !errors.Is(outage, outage.Err) {
		t.Error("OutageError does not unwrap to its cause")
	}
}
