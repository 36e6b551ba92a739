package devidp_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/oauth/devidp"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
)

// cmd is the command as a service binary offers it.
var cmd = devidp.Command{Name: "example-service dev-idp"}

// running is a provider started with the command, and what it printed.
type running struct {
	issuer  string   // from the "dev-idp: issuer URL" line
	service []string // the flags it says to give the service
	mint    string   // the line it says mints a token
	stderr  *syncbuf.Buffer

	mu     sync.Mutex
	stdout []string
	cancel context.CancelFunc
	done   chan error // the command's error, once it has stopped

	stopOnce sync.Once
	err      error
}

// banner returns what the command has printed to stdout so far.
func (r *running) banner() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.stdout, "\n")
}

// stop stops the command as an interrupt does and returns its error.
func (r *running) stop() error {
	r.stopOnce.Do(func() {
		r.cancel()
		r.err = <-r.done
	})
	return r.err
}

// flag returns the value the printed service flags give name.
func (r *running) flag(t *testing.T, name string) string {
	t.Helper()
	i := slices.Index(r.service, name)
	if i < 0 || i+1 >= len(r.service) {
		t.Fatalf("the printed service flags %q have no %s", r.service, name)
	}
	return r.service[i+1]
}

// runCommand runs the command with args on 127.0.0.1:0 until the end of
// the test, and returns once it has printed its banner.
func runCommand(t *testing.T, args ...string) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	r := &running{stderr: &syncbuf.Buffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := cmd.Run(ctx, append([]string{"-addr", "127.0.0.1:0"}, args...), pw, r.stderr)
		pw.Close()
		r.done <- err
	}()
	ready := make(chan bool, 1)
	go func() {
		// Reads to the end, so that the command never blocks writing.
		sc := bufio.NewScanner(pr)
		signalled := false
		for sc.Scan() {
			r.mu.Lock()
			r.stdout = append(r.stdout, sc.Text())
			r.mu.Unlock()
			if !signalled && sc.Text() == "dev-idp: serving until interrupted" {
				signalled = true
				ready <- true
			}
		}
		if !signalled {
			ready <- false
		}
	}()
	if !<-ready {
		err := <-r.done
		t.Fatalf("dev-idp %q stopped before serving: %v\nstdout:\n%s\nstderr:\n%s", args, err, r.banner(), r.stderr)
	}
	t.Cleanup(func() {
		if err := r.stop(); err != nil {
			t.Errorf("dev-idp stopped with %v", err)
		}
	})
	lines := r.stdout
	for i, line := range lines {
		if v, ok := strings.CutPrefix(line, "dev-idp: issuer "); ok {
			r.issuer = v
		}
		if line == "dev-idp: run the service with" && i+1 < len(lines) {
			r.service = strings.Fields(lines[i+1])
		}
		if line == "dev-idp: mint a token (only the token is printed) with" && i+1 < len(lines) {
			r.mint = strings.TrimSpace(lines[i+1])
		}
	}
	if r.issuer == "" || r.service == nil || r.mint == "" {
		t.Fatalf("the banner lacks the issuer, the service flags or the token line:\n%s", r.banner())
	}
	return r
}

// token runs "dev-idp token" with args and returns its stdout, stderr
// and error.
func token(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err = cmd.Run(t.Context(), append([]string{"token"}, args...), &out, &errOut)
	return out.String(), errOut.String(), err
}

// mint runs "dev-idp token" with args and returns the token, checking
// that it is all the command printed.
func mint(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := token(t, args...)
	if err != nil {
		t.Fatalf("token %q: %v\n%s", args, err, errOut)
	}
	tok, ok := strings.CutSuffix(out, "\n")
	if !ok || tok == "" || strings.ContainsAny(tok, " \n") {
		t.Fatalf("token %q printed %q, want one line holding the token", args, out)
	}
	return tok
}

// TestCommand: the provider the command runs mints, through "token",
// tokens the real verifier accepts for the printed -oidc-issuer and
// -audience, with the subject and exactly the roles asked for; its banner
// says it is for development, and it stops when its context is done.
func TestCommand(t *testing.T) {
	r := runCommand(t)
	if got := r.flag(t, "-oidc-issuer"); got != r.issuer {
		t.Errorf("-oidc-issuer %s, want the issuer %s", got, r.issuer)
	}
	for _, want := range []string{"dev-idp: DEVELOPMENT ONLY", "client dev-client, secret dev-secret", "Never let this provider protect anything real"} {
		if !strings.Contains(r.banner(), want) {
			t.Errorf("the banner lacks %q:\n%s", want, r.banner())
		}
	}
	if want := "TOKEN=$(example-service dev-idp token -roles editor -issuer " + r.issuer + ")"; r.mint != want {
		t.Errorf("token line %q, want %q", r.mint, want)
	}
	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: r.flag(t, "-oidc-issuer"), Audience: r.flag(t, "-audience"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var tokens []string
	for _, tt := range []struct {
		args    []string
		subject string
		roles   []string
	}{
		{[]string{"-roles", "editor"}, "developer", []string{"editor"}},
		{[]string{"-roles", "viewer", "-subject", "alice"}, "alice", []string{"viewer"}},
		{[]string{"-roles", "editor, viewer", "-subject", "bob"}, "bob", []string{"editor", "viewer"}},
		{[]string{"-subject", "carol"}, "carol", nil},
	} {
		tok := mint(t, append(tt.args, "-issuer", r.issuer)...)
		tokens = append(tokens, tok)
		c, err := v.Verify(t.Context(), tok, nil)
		if err != nil {
			t.Errorf("token %q: %v", tt.args, err)
			continue
		}
		if c.Subject != tt.subject || !slices.Equal(c.Roles, tt.roles) || c.Client != "dev-client" {
			t.Errorf("token %q: subject %q roles %q client %q, want %q %q dev-client", tt.args, c.Subject, c.Roles, c.Client, tt.subject, tt.roles)
		}
	}
	if !strings.Contains(r.stderr.String(), "subject=alice roles=[viewer]") {
		t.Errorf("stderr has no line for alice's token:\n%s", r.stderr)
	}
	for _, tok := range tokens {
		if strings.Contains(r.stderr.String()+r.banner(), tok) {
			t.Errorf("the command printed a token it issued:\n%s", r.stderr)
		}
	}
	if err := r.stop(); err != nil {
		t.Fatalf("stopping: %v", err)
	}
	if !strings.HasSuffix(r.banner(), "dev-idp: stopped") {
		t.Errorf("stdout does not end with dev-idp: stopped:\n%s", r.banner())
	}
	_, _, err = token(t, "-roles", "editor", "-issuer", r.issuer)
	if err == nil || !strings.Contains(err.Error(), "no provider runs at issuer "+r.issuer) {
		t.Errorf("token after the provider stopped: %v, want no provider runs at issuer %s", err, r.issuer)
	}
}

// TestCommandAudienceAndRolesClaim: -audience and -roles-claim shape the
// tokens and the printed service flags, and token -audience asks for
// another audience.
func TestCommandAudienceAndRolesClaim(t *testing.T) {
	const aud = "https://tools.example.test/mcp"
	r := runCommand(t, "-audience", aud, "-roles-claim", "realm_access.roles", "-client-id", "cli", "-client-secret", "s3cret")
	if got := r.flag(t, "-audience"); got != aud {
		t.Errorf("-audience %s, want %s", got, aud)
	}
	if got := r.flag(t, "-roles-claim"); got != "realm_access.roles" {
		t.Errorf("-roles-claim %s, want realm_access.roles", got)
	}
	if !strings.HasSuffix(r.mint, "-client-id cli -client-secret s3cret)") {
		t.Errorf("token line %q does not name the client", r.mint)
	}
	creds := []string{"-issuer", r.issuer, "-client-id", "cli", "-client-secret", "s3cret"}
	tok := mint(t, append([]string{"-roles", "admin"}, creds...)...)
	v, err := oauth.NewJWTVerifier(oauth.JWTOptions{Issuer: r.issuer, Audience: aud, RolesClaim: r.flag(t, "-roles-claim"), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	if c, err := v.Verify(t.Context(), tok, nil); err != nil || !slices.Equal(c.Roles, []string{"admin"}) {
		t.Errorf("verify: %v, %v; want roles [admin] at realm_access.roles", c, err)
	}
	other := mint(t, append([]string{"-roles", "admin", "-audience", upstream}, creds...)...)
	if _, err := v.Verify(t.Context(), other, nil); err == nil {
		t.Errorf("a token for -audience %s verified for %s", upstream, aud)
	}
	if _, _, err := token(t, "-roles", "admin", "-issuer", r.issuer); err == nil || !strings.Contains(err.Error(), "invalid_client") {
		t.Errorf("token with the default client against -client-id cli: %v, want invalid_client", err)
	}
}

// TestCommandOpaque: with -opaque the printed flags introspect, and the
// introspection verifier reads the minted roles.
func TestCommandOpaque(t *testing.T) {
	r := runCommand(t, "-opaque")
	if !strings.Contains(r.banner(), "printf %s dev-secret > dev-idp.secret") {
		t.Errorf("the banner does not say how to write the secret file:\n%s", r.banner())
	}
	tok := mint(t, "-roles", "editor", "-issuer", r.issuer)
	if strings.Count(tok, ".") == 2 {
		t.Errorf("-opaque minted a JWT: %s", tok)
	}
	iv, err := oauth.NewIntrospectionVerifier(oauth.IntrospectionOptions{
		URL: r.flag(t, "-introspect"), ClientID: r.flag(t, "-introspect-client-id"), ClientSecret: "dev-secret",
		Audience: r.flag(t, "-audience"), Issuer: r.flag(t, "-oidc-issuer"), Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	if c, err := iv.Verify(t.Context(), tok, nil); err != nil || c.Subject != "developer" || !slices.Equal(c.Roles, []string{"editor"}) {
		t.Errorf("introspected: %v, %v; want developer [editor]", c, err)
	}
}

// TestCommandTokenNoProvider: token against an issuer where nothing runs
// fails saying so, and prints nothing to stdout.
func TestCommandTokenNoProvider(t *testing.T) {
	issuer := deadIssuer(t)
	out, _, err := token(t, "-roles", "editor", "-issuer", issuer)
	if err == nil || !strings.Contains(err.Error(), "no provider runs at issuer "+issuer+" (start one with `example-service dev-idp`") {
		t.Errorf("token against %s: %v, want no provider runs at issuer", issuer, err)
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	if err != nil && strings.Contains(err.Error(), "dev-secret") {
		t.Errorf("the error holds the secret: %v", err)
	}
}

// TestCommandRefusesNonLoopback: an -addr off loopback is refused as a
// usage error naming the flag, the value and -allow-non-loopback, before
// anything listens.
func TestCommandRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{":9400", "0.0.0.0:9400", "[::]:9400", "192.0.2.1:9400", "idp.example.test:9400"} {
		var out, errOut bytes.Buffer
		err := cmd.Run(t.Context(), []string{"-addr", addr}, &out, &errOut)
		if !errors.Is(err, devidp.ErrUsage) || !strings.Contains(err.Error(), `-addr "`+addr+`" is not a loopback address`) ||
			!strings.Contains(err.Error(), "-allow-non-loopback") {
			t.Errorf("-addr %s: %v, want a usage error naming -addr and -allow-non-loopback", addr, err)
		}
		if out.Len() != 0 || !strings.Contains(errOut.String(), "usage: example-service dev-idp [flags]") {
			t.Errorf("-addr %s: stdout %q, stderr %q; want the usage on stderr only", addr, out.String(), errOut.String())
		}
	}
	// Allowed, an address of every interface still needs the issuer
	// clients reach it at: this is refused before listening too.
	err := cmd.Run(t.Context(), []string{"-addr", "0.0.0.0:9400", "-allow-non-loopback"}, io.Discard, io.Discard)
	if !errors.Is(err, devidp.ErrUsage) || !strings.Contains(err.Error(), "-issuer") {
		t.Errorf("-allow-non-loopback without -issuer: %v, want a usage error naming -issuer", err)
	}
}

// TestCommandUsageErrors: mistaken command lines are usage errors that
// name the flag, the value and the accepted forms; -h is flag.ErrHelp.
func TestCommandUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-addr", "9400"}, `-addr "9400": want HOST:PORT, such as 127.0.0.1:9400`},
		{[]string{"-issuer", "ftp://idp"}, `-issuer "ftp://idp" is not an http(s) URL of a host alone`},
		{[]string{"-audience", ""}, "-audience is empty"},
		{[]string{"-roles-claim", "sub"}, `-roles-claim "sub" is in the registered claim "sub"`},
		{[]string{"-roles-claim", "realm_access..roles"}, `-roles-claim "realm_access..roles" has an empty segment`},
		{[]string{"-client-secret", ""}, "-client-secret is empty"},
		{[]string{"-lifetime", "0s"}, "-lifetime 0s: want a positive duration"},
		{[]string{"-lifetime", "soon"}, `invalid value "soon" for flag -lifetime`},
		{[]string{"-nope"}, "flag provided but not defined: -nope"},
		{[]string{"serve"}, `unexpected argument "serve": the only subcommand is token`},
		{[]string{"token", "-roles", "editor,,viewer"}, `-roles "editor,,viewer": role 2 is empty: want ROLE[,ROLE...]`},
		{[]string{"token", "-roles", "editor,"}, `-roles "editor,": role 2 is empty`},
		{[]string{"token", "-roles", `ed"itor`}, `-roles "ed\"itor": role "ed\"itor" holds '"'`},
		{[]string{"token", "-subject", ""}, `-subject "" is empty`},
		{[]string{"token", "-subject", "alice smith"}, `-subject "alice smith" holds ' '`},
		{[]string{"token", "-issuer", "127.0.0.1:9400"}, `-issuer "127.0.0.1:9400" is not an http(s) URL`},
		{[]string{"token", "-client-id", ""}, "-client-id is empty"},
		{[]string{"token", "editor"}, `unexpected argument "editor": roles go in -roles ROLE[,ROLE]`},
	} {
		var out, errOut bytes.Buffer
		err := cmd.Run(t.Context(), tt.args, &out, &errOut)
		if !errors.Is(err, devidp.ErrUsage) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want a usage error holding %q", tt.args, err, tt.want)
		}
		if out.Len() != 0 || !strings.Contains(errOut.String(), "usage: example-service dev-idp") {
			t.Errorf("%q: stdout %q, stderr %q; want the usage on stderr only", tt.args, out.String(), errOut.String())
		}
	}
	for _, args := range [][]string{{"-h"}, {"-help"}, {"token", "-h"}} {
		var errOut bytes.Buffer
		if err := cmd.Run(t.Context(), args, io.Discard, &errOut); !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: %v, want flag.ErrHelp", args, err)
		}
		if !strings.Contains(errOut.String(), "-roles") {
			t.Errorf("%q: the usage does not list the token flags or subcommand:\n%s", args, errOut.String())
		}
	}
}
