package devproxy

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/tokenfile"
)

// DefaultAddr is the address [Command] listens on without -addr.
const DefaultAddr = "127.0.0.1:9401"

// shutdownTimeout bounds how long [Command] waits for requests in flight
// once its context is done.
const shutdownTimeout = 5 * time.Second

// usage is the head of Command's usage text.
const usage = `Usage:
  dev-proxy [-addr ` + DefaultAddr + `] -policy FILE -tokens FILE

A local stand-in for the RBAC proxy: it answers the proxy's auth API
(POST ` + DefaultAuthPath + `, POST ` + DefaultRoutesPath + `) from role policies
and a tokens file, for a service started with -proxy-auth URL. For local
development only: the tokens are static.

Flags:
`

// Command is the dev-proxy command: it parses args (the flags, without
// the command's name), serves [New]'s handler on -addr until ctx is
// done, and returns nil then. It prints to stdout the proxy's URL, the
// policy's roles, the tokens' subjects (never the tokens) and the
// -proxy-auth flag to give the service; to stderr, a log record per
// request.
//
//	dev-proxy [-addr 127.0.0.1:9401] -policy FILE -tokens FILE [-allow-non-loopback]
//
// -policy names a JSON array of role policies ([authz.ParsePolicy]),
// -tokens a tokens file (package tokenfile) whose roles the policy must
// define; both are required. -addr must be a loopback address unless
// -allow-non-loopback is given: anyone who reaches the proxy can test
// guesses of tokens against it.
//
// On -h or -help Command prints the usage to stderr and returns
// [flag.ErrHelp]; on a flag the flag package cannot parse, it prints the
// flag package's message and the usage and returns that error. Every
// other error is returned unprinted, naming the flag, its value and what
// is accepted; the caller prints it.
func Command(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dev-proxy", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", DefaultAddr, "listen on `HOST:PORT` (a loopback address; port 0 picks a free port)")
	policyFile := fs.String("policy", "", "role policies `FILE` (JSON: [{\"role\", \"accessPolicies\"}]); required")
	tokensFile := fs.String("tokens", "", "tokens `FILE` (JSON: [{\"token\", \"subject\", \"roles\"}]); required")
	allowRemote := fs.Bool("allow-non-loopback", false, "let -addr be an address other hosts can reach (they can then test guesses of tokens)")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("dev-proxy: unexpected argument %q: dev-proxy takes flags only (-addr, -policy, -tokens, -allow-non-loopback)", fs.Arg(0))
	case *policyFile == "":
		return errors.New("dev-proxy: -policy is required: the role policies file (JSON, [{\"role\", \"accessPolicies\"}]) that decides, e.g. -policy policy.json")
	case *tokensFile == "":
		return errors.New("dev-proxy: -tokens is required: the tokens file (JSON, [{\"token\", \"subject\", \"roles\"}]) that names the callers, e.g. -tokens tokens.json")
	}
	if err := checkAddr(*addr, *allowRemote); err != nil {
		return err
	}
	policy, err := readPolicy(*policyFile)
	if err != nil {
		return err
	}
	tokens, err := tokenfile.Read(*tokensFile, policy.Roles())
	if err != nil {
		return fmt.Errorf("dev-proxy: -tokens: %w", err)
	}
	if len(tokens) == 0 {
		return fmt.Errorf("dev-proxy: -tokens %s: the file holds no tokens, so every request would be answered 401: add entries {\"token\", \"subject\", \"roles\"}", *tokensFile)
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	h, err := New(policy, tokens, Options{Logger: logger})
	if err != nil {
		return fmt.Errorf("dev-proxy: %w", err)
	}

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("dev-proxy: -addr %s: %w", *addr, err)
	}
	if tcp, ok := ln.Addr().(*net.TCPAddr); !*allowRemote && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return fmt.Errorf("dev-proxy: -addr %s: listening on %s, which is not a loopback address: give a loopback address (127.0.0.1:PORT, [::1]:PORT) or -allow-non-loopback", *addr, ln.Addr())
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	url := "http://" + ln.Addr().String()
	subjects := make([]string, len(tokens))
	for i, t := range tokens {
		subjects[i] = fmt.Sprintf("%s (%s)", t.Subject, strings.Join(t.Roles, ", "))
		if len(t.Roles) == 0 {
			subjects[i] = t.Subject + " (no roles: denied everything)"
		}
	}
	fmt.Fprintf(stdout, "dev-proxy: RBAC proxy auth API at %s (POST %s, POST %s)\n", url, DefaultAuthPath, DefaultRoutesPath)
	fmt.Fprintf(stdout, "dev-proxy: roles of %s: %s\n", *policyFile, strings.Join(policy.Roles(), ", "))
	fmt.Fprintf(stdout, "dev-proxy: callers of %s: %s\n", *tokensFile, strings.Join(subjects, "; "))
	fmt.Fprintf(stdout, "dev-proxy: give the service: -proxy-auth %s\n", url)

	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return fmt.Errorf("dev-proxy: %w", err)
	case <-ctx.Done():
	}
	stop, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(stop); err != nil {
		srv.Close()
	}
	<-done
	return nil
}

// checkAddr refuses an -addr that is not HOST:PORT, or, unless
// allowRemote, whose host is not a loopback address or "localhost".
func checkAddr(addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("dev-proxy: -addr %q: want HOST:PORT, e.g. %s or 127.0.0.1:0 (a free port): %w", addr, DefaultAddr, err)
	}
	if allowRemote {
		return nil
	}
	ip := net.ParseIP(host)
	if strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	what := "not a loopback address"
	if host == "" {
		what = "an empty host listens on every interface"
	}
	return fmt.Errorf("dev-proxy: -addr %q: %s: want a loopback address (127.0.0.1:PORT, [::1]:PORT, localhost:PORT), or pass -allow-non-loopback to let other hosts reach the proxy (and test guesses of its tokens)", addr, what)
}

// readPolicy reads and compiles the role policies of file, and refuses a
// policy without roles (no token could name one).
func readPolicy(file string) (*authz.Policy, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("dev-proxy: -policy: %w", err)
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("dev-proxy: -policy %s: the file is empty: want a JSON array of role policies [{\"role\", \"accessPolicies\"}]", file)
	}
	p, err := authz.ParsePolicy(data)
	if err != nil {
		return nil, fmt.Errorf("dev-proxy: -policy %s: %w", file, err)
	}
	if len(p.Roles()) == 0 {
		return nil, fmt.Errorf("dev-proxy: -policy %s: the policy defines no role: every route would be denied to every caller; give at least one role policy {\"role\", \"accessPolicies\"}", file)
	}
	return p, nil
}
