package tokenfile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/tokenfile"
	"github.com/toolroute/toolroute/server"
)

// demoRoles are the roles of example-service's policy.
var demoRoles = []string{"admin", "editor", "viewer"}

// TestParse: a well-formed file gives its entries, in order, roles
// included; nil roles accept any role.
func TestParse(t *testing.T) {
	data := []byte(`[
  {"token": "demo-viewer", "subject": "viewer@demo", "roles": ["viewer"]},
  {"token": "demo-admin", "subject": "admin@demo", "roles": ["admin", "editor"]},
  {"token": "no-roles", "subject": "nobody"}
]`)
	want := []tokenfile.Entry{
		{Token: "demo-viewer", Subject: "viewer@demo", Roles: []string{"viewer"}},
		{Token: "demo-admin", Subject: "admin@demo", Roles: []string{"admin", "editor"}},
		{Token: "no-roles", Subject: "nobody"},
	}
	for _, roles := range [][]string{demoRoles, nil} {
		got, err := tokenfile.Parse(data, roles)
		if err != nil {
			t.Fatalf("Parse(roles %q): %v", roles, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Parse(roles %q) (-want +got):\n%s", roles, diff)
		}
	}
	if _, err := tokenfile.Parse([]byte(`[{"token": "t", "subject": "s", "roles": ["superuser"]}]`), nil); err != nil {
		t.Errorf("nil roles refused a role: %v", err)
	}
	if got, err := tokenfile.Parse([]byte(` [] `), demoRoles); err != nil || len(got) != 0 {
		t.Errorf("Parse([]) = %v, %v; want no entries, no error", got, err)
	}
}

// TestParseErrors: each malformed file is refused with a message naming
// the problem and the entry, never quoting a token; all problems of a
// file are reported at once.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, data string
		roles      []string
		want       []string // each in the error
	}{
		{"empty file", " \n", nil, []string{`tokenfile: the file is empty: want a JSON array of {"token", "subject", "roles"}`}},
		{"null", `null`, nil, []string{"got null"}},
		{"object", `{"token": "tok-obj", "subject": "s"}`, nil, []string{`want a JSON array of {"token", "subject", "roles"}`, "line 1, column 1"}},
		{"syntax", "[\n  {\"token\": \"tok-syn\" \"subject\": \"s\"}\n]", nil, []string{"line 2, column 23", "invalid character"}},
		{"type", `[{"token": 7, "subject": "s"}]`, nil, []string{"line 1, column 12", "cannot unmarshal number"}},
		{"unknown field", `[{"token": "tok-uf", "subject": "s", "role": ["viewer"]}]`, nil, []string{`unknown field "role"`}},
		{"trailing data", `[{"token": "tok-tr", "subject": "s"}] [{"token": "tok-tr2", "subject": "t"}]`, nil, []string{"unexpected data after the JSON array at offset"}},
		{"trailing garbage", `[] x`, nil, []string{"unexpected data after the JSON array"}},
		{"empty token", `[{"token": "", "subject": "s"}]`, nil, []string{"tokenfile: entry 0: empty token"}},
		{"space", `[{"token": "a b", "subject": "s"}]`, nil, []string{"entry 0: the token holds white space or control characters"}},
		{"tab", `[{"token": "tok\tx", "subject": "s"}]`, nil, []string{"entry 0: the token holds white space"}},
		{"newline", `[{"token": "tok-nl\n", "subject": "s"}]`, nil, []string{"entry 0: the token holds white space"}},
		{"control", `[{"token": "tok\u0001x", "subject": "s"}]`, nil, []string{"entry 0: the token holds white space or control characters"}},
		{"DEL", `[{"token": "tok\u007fx", "subject": "s"}]`, nil, []string{"entry 0: the token holds white space or control characters"}},
		{"duplicate", `[{"token": "tok-1", "subject": "x"}, {"token": "tok-2", "subject": "y"}, {"token": "tok-1", "subject": "z"}]`, nil, []string{"entry 2: duplicate token (the token of entry 0)"}},
		{"empty subject", `[{"token": "tok-es", "subject": ""}]`, nil, []string{"entry 0: empty subject"}},
		{"unknown role", `[{"token": "tok-9", "subject": "root@x", "roles": ["superuser"]}]`, []string{"viewer"}, []string{`entry 0 (subject "root@x"): the policy has no role "superuser" (it has "viewer")`}},
		{"policy without roles", `[{"token": "tok-9", "subject": "root@x", "roles": ["viewer"]}]`, []string{}, []string{`the policy has no role "viewer" (it has none)`}},
		// example-service's TestFlagErrors file: every problem at once.
		{"all at once", `[{"token": "a b", "subject": "", "roles": ["root"]}, {"token": "tok-1", "subject": "x"}, {"token": "tok-1", "subject": "y"}]`, demoRoles, []string{
			"entry 0: the token holds white space", "entry 0: empty subject", `entry 0 (subject ""): the policy has no role "root"`, "entry 2: duplicate token",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			entries, err := tokenfile.Parse([]byte(tt.data), tt.roles)
			if err == nil {
				t.Fatalf("Parse(%s): no error, entries %v", tt.data, entries)
			}
			if entries != nil {
				t.Errorf("Parse(%s) returned entries with an error: %v", tt.data, entries)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			noToken(t, err.Error(), tt.data)
		})
	}
}

// noToken fails if s holds one of the tokens of data (values of "token"
// fields, found without decoding the possibly malformed JSON).
func noToken(t *testing.T, s, data string) {
	t.Helper()
	for rest := data; ; {
		i := strings.Index(rest, `"token": "`)
		if i < 0 {
			return
		}
		rest = rest[i+len(`"token": "`):]
		end := strings.IndexByte(rest, '"')
		if tok := rest[:end]; len(tok) > 1 && strings.Contains(s, tok) {
			t.Errorf("%q quotes the token %q", s, tok)
		}
	}
}

// TestRead: Read parses a file like Parse, and its errors name the file.
func TestRead(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens.json")
	os.WriteFile(good, []byte(`[{"token": "demo-editor", "subject": "editor@demo", "roles": ["editor"]}]`), 0o600)
	entries, err := tokenfile.Read(good, demoRoles)
	if err != nil || len(entries) != 1 || entries[0].Token != "demo-editor" || entries[0].Subject != "editor@demo" {
		t.Fatalf("Read: %v, %v", entries, err)
	}

	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`[{"token": "tok-1", "subject": "x", "roles": ["root"]}]`), 0o600)
	_, err = tokenfile.Read(bad, demoRoles)
	if want := "tokenfile: " + bad + `: entry 0 (subject "x"): the policy has no role "root"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Read(bad) = %v, want %q", err, want)
	}
	empty := filepath.Join(dir, "empty.json")
	os.WriteFile(empty, nil, 0o600)
	if _, err := tokenfile.Read(empty, nil); err == nil || !strings.Contains(err.Error(), "tokenfile: "+empty+": the file is empty") {
		t.Errorf("Read(empty) = %v", err)
	}
	missing := filepath.Join(dir, "missing.json")
	_, err = tokenfile.Read(missing, nil)
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), missing) {
		t.Errorf("Read(missing) = %v, want a not-exist error naming the file", err)
	}
}

// TestCheck: Check applies Parse's rules to entries built in code.
func TestCheck(t *testing.T) {
	ok := []tokenfile.Entry{{Token: "a", Subject: "s", Roles: []string{"viewer"}}, {Token: "b", Subject: "t"}}
	if err := tokenfile.Check(ok, demoRoles); err != nil {
		t.Errorf("Check(ok): %v", err)
	}
	bad := []tokenfile.Entry{{Token: "same-secret", Subject: "s"}, {Token: "same-secret", Subject: "t", Roles: []string{"root"}}}
	err := tokenfile.Check(bad, demoRoles)
	if err == nil || !strings.Contains(err.Error(), "entry 1: duplicate token") || !strings.Contains(err.Error(), `the policy has no role "root"`) {
		t.Errorf("Check(bad) = %v", err)
	}
	if err != nil && strings.Contains(err.Error(), "same-secret") {
		t.Errorf("Check quotes the token: %v", err)
	}
}

// TestCallers: the map is what server.StaticTokens takes, and the
// verifier it makes knows exactly the file's tokens, as their callers.
func TestCallers(t *testing.T) {
	entries, err := tokenfile.Parse([]byte(`[
  {"token": "demo-viewer", "subject": "viewer@demo", "roles": ["viewer"]},
  {"token": "demo-admin", "subject": "admin@demo", "roles": ["admin"]}
]`), demoRoles)
	if err != nil {
		t.Fatal(err)
	}
	callers := tokenfile.Callers(entries)
	want := map[string]authz.Caller{
		"demo-viewer": {Subject: "viewer@demo", Roles: []string{"viewer"}},
		"demo-admin":  {Subject: "admin@demo", Roles: []string{"admin"}},
	}
	if diff := cmp.Diff(want, callers); diff != "" {
		t.Errorf("Callers (-want +got):\n%s", diff)
	}
	// The roles are copies: changing a caller's leaves the entry alone.
	callers["demo-viewer"].Roles[0] = "admin"
	if entries[0].Roles[0] != "viewer" {
		t.Errorf("Callers shares the entries' roles: entry 0 now has %q", entries[0].Roles)
	}

	verify := server.StaticTokens(tokenfile.Callers(entries))
	c, err := verify(context.Background(), "demo-admin", nil)
	if err != nil || c.Subject != "admin@demo" || !cmp.Equal(c.Roles, []string{"admin"}) {
		t.Errorf("verify(demo-admin) = %v, %v", c, err)
	}
	if _, err := verify(context.Background(), "demo-editor", nil); !errors.Is(err, server.ErrInvalidToken) {
		t.Errorf("verify(unknown token) = %v, want ErrInvalidToken", err)
	}
}

// TestCallersPanics: entries that would replace one another, or an empty
// token, are a programming error.
func TestCallersPanics(t *testing.T) {
	for _, tt := range []struct {
		entries []tokenfile.Entry
		want    string
	}{
		{[]tokenfile.Entry{{Token: "dup-secret", Subject: "a"}, {Token: "dup-secret", Subject: "b"}}, `tokenfile: Callers: entry 1 (subject "b"): duplicate token`},
		{[]tokenfile.Entry{{Token: "", Subject: "a"}}, `tokenfile: Callers: entry 0 (subject "a"): empty token`},
	} {
		func() {
			defer func() {
				r := recover()
				if s, _ := r.(string); s != tt.want {
					t.Errorf("Callers(%v) panicked with %v, want %q", tt.entries, r, tt.want)
				}
			}()
			tokenfile.Callers(tt.entries)
		}()
	}
}

// TestEntryRedacts: no verb and no log record prints an entry's token;
// its JSON form, the file format, keeps it.
func TestEntryRedacts(t *testing.T) {
	const secret = "s3cret-token"
	e := tokenfile.Entry{Token: secret, Subject: "alice", Roles: []string{"editor"}}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%10.3v"} {
		for _, v := range []any{e, &e, []tokenfile.Entry{e}, map[string]tokenfile.Entry{"k": e}} {
			if got := fmt.Sprintf(verb, v); strings.Contains(got, secret) || strings.Contains(got, fmt.Sprintf("%x", secret)) {
				t.Errorf("Sprintf(%q, %T) = %s: holds the token", verb, v, got)
			}
		}
	}
	if got, want := e.String(), `Entry{Subject: "alice", Roles: ["editor"], Token: [redacted]}`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	if got, want := fmt.Sprintf("%#v", e), `tokenfile.Entry{Token:"[redacted]", Subject:"alice", Roles:[]string{"editor"}}`; got != want {
		t.Errorf("%%#v = %s, want %s", got, want)
	}
	var log bytes.Buffer
	slog.New(slog.NewJSONHandler(&log, nil)).Info("entry", "entry", e)
	if s := log.String(); strings.Contains(s, secret) || !strings.Contains(s, `"entry":{"subject":"alice","roles":["editor"],"token":"[redacted]"}`) {
		t.Errorf("log record: %s", s)
	}
	data, err := json.Marshal([]tokenfile.Entry{e})
	if err != nil {
		t.Fatal(err)
	}
	back, err := tokenfile.Parse(data, nil)
	if err != nil || len(back) != 1 || back[0].Token != secret {
		t.Errorf("JSON round trip: %s → %v, %v", data, back, err)
	}
}
