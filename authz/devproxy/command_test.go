package devproxy_test

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/devproxy"
	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/tool"
)

// files writes policyJSON and tokensJSON to a temporary directory.
func files(t *testing.T) (policy, tokens string) {
	t.Helper()
	dir := t.TempDir()
	policy, tokens = filepath.Join(dir, "policy.json"), filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(policy, []byte(policyJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokens, []byte(tokensJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	return policy, tokens
}

// cmd is the command as a service binary offers it.
var cmd = devproxy.Command{Name: "example-service dev-proxy"}

// proxyAuthLine is the banner's line of flags to give the service.
var proxyAuthLine = regexp.MustCompile(`^    -proxy-auth (http://127\.0\.0\.1:[0-9]+)$`)

// TestCommand: dev-proxy on 127.0.0.1:0 prints its URL, roles and
// callers (never a token) and the flag to give the service, answers
// ProxyAuth at that URL, logs each decision to stderr, and returns nil
// once its context is done.
func TestCommand(t *testing.T) {
	policy, tokens := files(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, outW := io.Pipe()
	var stderr syncbuf.Buffer
	done := make(chan error, 1)
	go func() {
		done <- cmd.Run(ctx, []string{"-addr", "127.0.0.1:0", "-policy", policy, "-tokens", tokens}, outW, &stderr)
		outW.Close()
	}()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var banner []string
	var url string
	for url == "" {
		line := await.Recv(t, lines, "the -proxy-auth line")
		if line == "" { // closed: no banner line is empty
			t.Fatalf("stdout ended before the -proxy-auth line: %q; stderr:\n%s", banner, stderr.String())
		}
		banner = append(banner, line)
		if m := proxyAuthLine.FindStringSubmatch(line); m != nil {
			url = m[1]
		}
	}
	want := []string{
		"dev-proxy: DEVELOPMENT ONLY: the tokens are static; whoever holds one is its caller.",
		"dev-proxy: RBAC proxy auth API at " + url + " (POST /api/v3/auth, POST /api/v3/auth-routes)",
		"dev-proxy: roles of " + policy + ": admin, bulk, editor, numbers, viewer",
		"dev-proxy: callers of " + tokens + ": viewer@demo (viewer); editor@demo (editor); admin@demo (admin); numbers@demo (numbers); bulk@demo (bulk); nobody@demo (no roles: denied everything)",
		"dev-proxy: run the service with",
		"    -proxy-auth " + url,
	}
	if diff := cmp.Diff(want, banner); diff != "" {
		t.Errorf("banner (-want +got):\n%s", diff)
	}

	pa := &authz.ProxyAuth{BaseURL: url}
	if err := pa.Ready(ctx); err != nil {
		t.Errorf("Ready: %v", err)
	}
	editor := authz.Caller{Subject: "s", Bearer: "demo-editor"}
	if err := pa.Allow(ctx, editor, route("PUT", "/catalog/api/v1/items/3")); err != nil {
		t.Errorf("Allow: %v", err)
	}
	var denied *authz.DeniedError
	if err := pa.Allow(ctx, editor, route("DELETE", "/catalog/api/v1/items/3")); !errors.As(err, &denied) {
		t.Errorf("Allow DELETE: %v, want denied", err)
	}
	got, err := pa.AllowMany(ctx, editor, []tool.Route{route("GET", "/catalog/api/v1/items"), route("DELETE", "/catalog/api/v1/items/{id}")})
	if err != nil || !cmp.Equal(got, []bool{true, false}) {
		t.Errorf("AllowMany: %v, %v", got, err)
	}
	var unauth *authz.UnauthenticatedError
	if err := pa.Allow(ctx, authz.Caller{Subject: "s", Bearer: "nope"}, route("GET", "/catalog/api/v1/items")); !errors.As(err, &unauth) {
		t.Errorf("Allow with an unknown token: %v", err)
	}

	cancel()
	if err := await.Recv(t, done, "Run's return"); err != nil {
		t.Errorf("Run after cancel: %v", err)
	}
	if err := pa.Ready(context.Background()); err == nil {
		t.Errorf("the proxy still answers after Run returned")
	}
	for line := range lines {
		banner = append(banner, line)
	}
	if last := banner[len(banner)-1]; last != "dev-proxy: stopped" {
		t.Errorf("the last line is %q, want dev-proxy: stopped; stdout:\n%s", last, strings.Join(banner, "\n"))
	}
	log := stderr.String()
	for _, w := range []string{
		`msg="dev-proxy: decision" subject=editor@demo route="PUT /catalog/api/v1/items/3" allowed=true`,
		`msg="dev-proxy: decision" subject=editor@demo route="DELETE /catalog/api/v1/items/3" allowed=false`,
		`msg="dev-proxy: batch decision" subject=editor@demo routes=2 distinct=2 allowed=1`,
		`msg="dev-proxy: unauthenticated"`,
	} {
		if !strings.Contains(log, w) {
			t.Errorf("stderr lacks %s:\n%s", w, log)
		}
	}
	noTokens(t, "stdout", strings.Join(banner, "\n"))
	noTokens(t, "stderr", log)
}

// TestCommandErrors: bad flags and files are refused before serving,
// with an error naming the flag, the value and what is accepted, and
// never a token; command-line mistakes are usage errors, printed with
// the usage.
func TestCommandErrors(t *testing.T) {
	policy, tokens := files(t)
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(content), 0o600)
		return p
	}
	badTokens := write("bad-tokens.json", `[{"token": "tok-sekrit", "subject": "root@x", "roles": ["superuser"]}, {"token": "tok-sekrit", "subject": "y"}]`)
	noTokensFile := write("no-tokens.json", `[]`)
	emptyPolicy := write("empty-policy.json", "\n")
	noRoles := write("no-roles.json", `[]`)
	badPolicy := write("bad-policy.json", `[{"role": "viewer", "accessPolicies": [{"path": "(", "methods": ["GET"], "effect": "allow"}]}]`)
	tests := []struct {
		args  []string
		usage bool // a usage error, printed with the usage; else returned unprinted
		want  string
	}{
		{[]string{"-tokens", tokens}, true, "dev-proxy: -policy is required: the role policies file"},
		{[]string{"-policy", policy}, true, "dev-proxy: -tokens is required: the tokens file"},
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", "0.0.0.0:0"}, true, `dev-proxy: -addr "0.0.0.0:0" is not a loopback address: whoever reaches the proxy can test guesses of its tokens, so it listens on 127.0.0.1, [::1] or localhost; pass -allow-non-loopback as well`},
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", ":9401"}, true, `-addr ":9401" listens on every interface`},
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", "192.0.2.1:0"}, true, "is not a loopback address"},
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", "example.com:0"}, true, "is not a loopback address"},
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", "9401"}, true, `dev-proxy: -addr "9401": want HOST:PORT, such as 127.0.0.1:9401 or 127.0.0.1:0 (a free port)`},
		// Past the loopback check, the address is still the system's to refuse
		// (192.0.2.1 is TEST-NET-1: no interface of this host has it).
		{[]string{"-policy", policy, "-tokens", tokens, "-addr", "192.0.2.1:0", "-allow-non-loopback"}, false, "dev-proxy: -addr 192.0.2.1:0: listen tcp 192.0.2.1:0"},
		{[]string{"-policy", filepath.Join(dir, "missing.json"), "-tokens", tokens}, false, "dev-proxy: -policy: open " + filepath.Join(dir, "missing.json")},
		{[]string{"-policy", emptyPolicy, "-tokens", tokens}, false, "dev-proxy: -policy " + emptyPolicy + ": the file is empty"},
		{[]string{"-policy", noRoles, "-tokens", tokens}, false, "dev-proxy: -policy " + noRoles + ": the policy defines no role"},
		{[]string{"-policy", badPolicy, "-tokens", tokens}, false, "dev-proxy: -policy " + badPolicy + `: authz: policy: role "viewer"`},
		{[]string{"-policy", policy, "-tokens", filepath.Join(dir, "missing.json")}, false, "dev-proxy: -tokens: tokenfile: open " + filepath.Join(dir, "missing.json")},
		{[]string{"-policy", policy, "-tokens", badTokens}, false, "dev-proxy: -tokens: tokenfile: " + badTokens + `: entry 0 (subject "root@x"): the policy has no role "superuser" (it has "admin", "bulk", "editor", "numbers", "viewer")`},
		{[]string{"-policy", policy, "-tokens", badTokens}, false, "entry 1: duplicate token"},
		{[]string{"-policy", policy, "-tokens", noTokensFile}, false, "dev-proxy: -tokens " + noTokensFile + ": the file holds no tokens, so every request would be answered 401"},
		{[]string{"-policy", policy, "-tokens", tokens, "serve"}, true, `dev-proxy: unexpected argument "serve": dev-proxy takes flags only`},
		{[]string{"-nope"}, true, "dev-proxy: flag provided but not defined: -nope"},
		{[]string{"-allow-non-loopback=maybe"}, true, `invalid boolean value "maybe" for -allow-non-loopback`},
	}
	// A context done already: should a case be accepted, Run returns at
	// once (nil) instead of serving until the test times out.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range tests {
		var stdout, stderr syncbuf.Buffer
		err := cmd.Run(ctx, tt.args, &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run %q: %v, want %q", tt.args, err, tt.want)
		}
		if got := errors.Is(err, devproxy.ErrUsage); got != tt.usage {
			t.Errorf("Run %q: a usage error: %v, want %v", tt.args, got, tt.usage)
		}
		switch printed := stderr.String(); {
		case tt.usage && (!strings.Contains(printed, strings.TrimPrefix(tt.want, "dev-proxy: ")) || !strings.Contains(printed, "usage: example-service dev-proxy")):
			t.Errorf("Run %q: the usage error and the usage are not printed:\n%s", tt.args, printed)
		case !tt.usage && printed != "":
			t.Errorf("Run %q printed its error (the caller prints it):\n%s", tt.args, printed)
		}
		if stdout.String() != "" {
			t.Errorf("Run %q printed to stdout:\n%s", tt.args, stdout.String())
		}
		if err != nil && strings.Contains(err.Error()+stderr.String(), "sekrit") {
			t.Errorf("Run %q: a token appears: %v\n%s", tt.args, err, stderr.String())
		}
	}
}

// TestCommandHelp: -h prints the usage and returns flag.ErrHelp.
func TestCommandHelp(t *testing.T) {
	var stdout, stderr syncbuf.Buffer
	err := cmd.Run(context.Background(), []string{"-h"}, &stdout, &stderr)
	if !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v, want flag.ErrHelp", err)
	}
	if stdout.String() != "" {
		t.Errorf("-h printed to stdout:\n%s", stdout.String())
	}
	for _, w := range []string{"usage: example-service dev-proxy [-addr 127.0.0.1:9401] -policy FILE -tokens FILE", "-allow-non-loopback", "-policy FILE", "-tokens FILE", "-addr HOST:PORT"} {
		if !strings.Contains(stderr.String(), w) {
			t.Errorf("usage lacks %q:\n%s", w, stderr.String())
		}
	}
}
