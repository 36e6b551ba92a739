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

// shutdownTimeout bounds how long [Command.Run] waits for requests in
// flight once its context is done.
const shutdownTimeout = 5 * time.Second

// ErrUsage is wrapped by the error [Command.Run] returns for a mistaken
// command line (by convention exit status 2). The error and the usage
// have been printed to stderr by then.
var ErrUsage = errors.New("usage error")

// usageError is a command-line mistake: its message names the flag, the
// value and the forms accepted.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

// Command is the dev-proxy command line, which a service binary offers as
// a subcommand ("example-service dev-proxy"): a local RBAC proxy, serving
// [New]'s handler on loopback, for a service started with -proxy-auth.
//
//	dev-proxy [-addr 127.0.0.1:9401] -policy FILE -tokens FILE [-allow-non-loopback]
//
// -policy names a JSON array of role policies ([authz.ParsePolicy]),
// -tokens a tokens file (package tokenfile) whose roles the policy must
// define; both are required. -addr must be a loopback address unless
// -allow-non-loopback is given: anyone who reaches the proxy can test
// guesses of its tokens.
//
// The zero Command is ready to use.
type Command struct {
	// Name is how users invoke the command, for its usage: "example-service
	// dev-proxy". "" selects "dev-proxy".
	Name string
}

// name is c's invocation.
func (c Command) name() string {
	if c.Name == "" {
		return "dev-proxy"
	}
	return c.Name
}

// warning is the banner's first line.
const warning = "DEVELOPMENT ONLY: the tokens are static; whoever holds one is its caller."

// Run runs the command line args (without the command's own name): it
// serves until ctx is done, then returns nil. Its banner goes to stdout:
// the proxy's URL, the policy's roles, the tokens' subjects (never the
// tokens) and the -proxy-auth flag to give the service; a log record per
// request goes to stderr. Usage errors (a flag that does not parse, a
// missing -policy or -tokens, an -addr that is not HOST:PORT or not a
// loopback address) wrap [ErrUsage] and have been printed, with the
// usage, to stderr; -h and -help return [flag.ErrHelp] after printing
// the usage. Other errors (a file that cannot be read or is invalid, an
// address that cannot be listened on) are returned unprinted; none
// quotes a token.
func (c Command) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := c.name()
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", DefaultAddr, "listen on `HOST:PORT`: a loopback address (127.0.0.1, [::1], localhost) unless -allow-non-loopback; port 0 picks a free port")
	policyFile := fs.String("policy", "", "the role policies `FILE` that decides (JSON, the RBAC proxy's shape: [{\"role\", \"accessPolicies\"}]); required")
	tokensFile := fs.String("tokens", "", "the tokens `FILE` that names the callers (JSON: [{\"token\", \"subject\", \"roles\"}]); required")
	allowRemote := fs.Bool("allow-non-loopback", false, "allow an -addr off loopback: only on a network you trust entirely, since whoever reaches the proxy can test guesses of its tokens")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [-addr %s] -policy FILE -tokens FILE\n\n"+
			"Runs a local RBAC proxy until interrupted. It answers the proxy's auth API\n"+
			"(POST %s, POST %s) from the role policies and the\n"+
			"tokens file, for a service started with -proxy-auth URL.\n\n%s\n\nflags:\n", name, DefaultAddr, DefaultAuthPath, DefaultRoutesPath, warning)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return &usageError{msg: "dev-proxy: " + err.Error()} // printed, with the usage
	}
	switch {
	case fs.NArg() > 0:
		return usage(fs, "unexpected argument %q: dev-proxy takes flags only (-addr, -policy, -tokens, -allow-non-loopback)", fs.Arg(0))
	case *policyFile == "":
		return usage(fs, "-policy is required: the role policies file (JSON, [{\"role\", \"accessPolicies\"}]) that decides, such as -policy policy.json")
	case *tokensFile == "":
		return usage(fs, "-tokens is required: the tokens file (JSON, [{\"token\", \"subject\", \"roles\"}]) that names the callers, such as -tokens tokens.json")
	}
	if err := checkAddr(fs, *addr, *allowRemote); err != nil {
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
	// "localhost" may resolve off loopback: judge where it listens.
	if tcp, ok := ln.Addr().(*net.TCPAddr); !*allowRemote && (!ok || !tcp.IP.IsLoopback()) {
		ln.Close()
		return fmt.Errorf("dev-proxy: -addr %s listens on %s, which is not a loopback address: give 127.0.0.1:PORT or [::1]:PORT, or pass -allow-non-loopback as well", *addr, ln.Addr())
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
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	banner(stdout, "http://"+ln.Addr().String(), *policyFile, policy, *tokensFile, tokens)

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
	fmt.Fprintln(stdout, "dev-proxy: stopped")
	return nil
}

// banner tells the developer what the proxy knows, and how a service uses
// it. It never prints a token.
func banner(w io.Writer, url, policyFile string, policy *authz.Policy, tokensFile string, tokens []tokenfile.Entry) {
	callers := make([]string, len(tokens))
	for i, t := range tokens {
		callers[i] = fmt.Sprintf("%s (%s)", t.Subject, strings.Join(t.Roles, ", "))
		if len(t.Roles) == 0 {
			callers[i] = t.Subject + " (no roles: denied everything)"
		}
	}
	fmt.Fprintln(w, "dev-proxy:", warning)
	fmt.Fprintf(w, "dev-proxy: RBAC proxy auth API at %s (POST %s, POST %s)\n", url, DefaultAuthPath, DefaultRoutesPath)
	fmt.Fprintf(w, "dev-proxy: roles of %s: %s\n", policyFile, strings.Join(policy.Roles(), ", "))
	fmt.Fprintf(w, "dev-proxy: callers of %s: %s\n", tokensFile, strings.Join(callers, "; "))
	fmt.Fprintln(w, "dev-proxy: run the service with")
	fmt.Fprintln(w, "    -proxy-auth", url)
	fmt.Fprintln(w, "dev-proxy: serving until interrupted")
}

// usage prints a command-line mistake and the usage to fs's output, and
// returns it as a usage error.
func usage(fs *flag.FlagSet, format string, args ...any) error {
	msg := "dev-proxy: " + fmt.Sprintf(format, args...)
	fmt.Fprintln(fs.Output(), msg)
	fs.Usage()
	return &usageError{msg: msg}
}

// checkAddr refuses, as a usage error, an -addr that is not HOST:PORT,
// or, unless allowRemote, whose host is not a loopback address or
// "localhost".
func checkAddr(fs *flag.FlagSet, addr string, allowRemote bool) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usage(fs, "-addr %q: want HOST:PORT, such as %s or 127.0.0.1:0 (a free port)", addr, DefaultAddr)
	}
	if allowRemote {
		return nil
	}
	if ip := net.ParseIP(host); strings.EqualFold(host, "localhost") || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	what := "is not a loopback address"
	if host == "" {
		what = "listens on every interface"
	}
	return usage(fs, "-addr %q %s: whoever reaches the proxy can test guesses of its tokens, so it listens on 127.0.0.1, [::1] or localhost; "+
		"pass -allow-non-loopback as well to listen there on a network you trust entirely", addr, what)
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
