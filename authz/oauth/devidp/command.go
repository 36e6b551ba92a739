package devidp

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"time"
)

// The command line's defaults: the provider's address, the audience a
// service started with its own defaults expects (the example service's
// MCP endpoint), the minting client, and the subject of minted tokens.
const (
	defaultAddr         = "127.0.0.1:9400"
	defaultIssuer       = "http://" + defaultAddr
	defaultAudience     = "http://127.0.0.1:8080/mcp"
	defaultClientID     = "dev-client"
	defaultClientSecret = "dev-secret"
	defaultSubject      = "developer"
	defaultTokenTTL     = time.Hour
)

// ErrUsage is wrapped by the error [Command.Run] returns for a mistaken
// command line (by convention exit status 2). The error and the usage
// have been printed to stderr by then.
var ErrUsage = errors.New("usage error")

// usageError is a command-line mistake: its message names the flag, the
// value and the forms accepted.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }
func (e *usageError) Unwrap() error { return ErrUsage }

// Command is the dev-idp command line, which a service binary offers as a
// subcommand ("example-service dev-idp"): a development OpenID provider
// on loopback, and a way to mint its tokens from the shell.
//
//	dev-idp [-addr 127.0.0.1:9400] [-audience ID] [-roles-claim roles] [flags]
//	dev-idp token [-roles editor,viewer] [-subject developer] [-issuer URL] [-audience ID]
//
// The first runs a [Provider] with one client that mints tokens (its ID
// and secret from -client-id and -client-secret, "dev-client" and
// "dev-secret" by default) until its context is done, and prints what a
// service and a shell need: the issuer, the client, the flags to give a
// toolroute service (-oidc-issuer URL -audience ID) and the line that
// mints a token. It refuses a non-loopback -addr unless
// -allow-non-loopback is given.
//
// The second asks the running provider's token endpoint for a token for
// those roles and that subject ([RequestToken]: client credentials, with
// the minting scopes) and prints only the token, so that
// TOKEN=$(dev-idp token -roles editor) works. With no provider at the
// issuer it fails saying so.
//
// The zero Command is ready to use.
type Command struct {
	// Name is how users invoke the command, for its usage and the lines
	// its banner prints to be copied: "example-service dev-idp". ""
	// selects "dev-idp".
	Name string
}

// name is c's invocation.
func (c Command) name() string {
	if c.Name == "" {
		return "dev-idp"
	}
	return c.Name
}

// Run runs the command line args (without the command's own name):
// "token" and its flags mint a token, anything else runs the provider
// until ctx is done. The provider's banner goes to stdout, a line per
// issued token to stderr; the token subcommand prints the token alone to
// stdout. Usage errors wrap [ErrUsage]; -h and -help return
// [flag.ErrHelp] after printing the usage to stderr.
func (c Command) Run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "token" {
		return c.token(ctx, args[1:], stdout, stderr)
	}
	return c.serve(ctx, args, stdout, stderr)
}

// warning is the banner's first lines.
const warning = `DEVELOPMENT ONLY: the client secret below is public, the signing keys
live in this process's memory only (its tokens stop verifying when it
exits), and its client mints tokens for any subject and roles it names.
Never let this provider protect anything real.`

// serveConfig is the provider's command line.
type serveConfig struct {
	addr, issuer, audience, rolesClaim string
	clientID, clientSecret             string
	lifetime                           time.Duration
	allowNonLoopback, opaque           bool
}

func (c Command) serve(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := c.name()
	var cfg serveConfig
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", defaultAddr, "listen on `HOST:PORT`: a loopback address (127.0.0.1, [::1], localhost) unless -allow-non-loopback")
	fs.BoolVar(&cfg.allowNonLoopback, "allow-non-loopback", false, "allow an -addr off loopback: only on a network you trust entirely, since the secret and the keys are known")
	fs.StringVar(&cfg.issuer, "issuer", "", "the issuer `URL` clients reach the provider at, with no path (default http://ADDR)")
	fs.StringVar(&cfg.audience, "audience", defaultAudience, "the tokens' audience `ID`: the service's -audience")
	fs.StringVar(&cfg.rolesClaim, "roles-claim", "roles", "the claim `PATH` minted roles are written to: the service's -roles-claim (roles, groups, realm_access.roles, scope)")
	fs.StringVar(&cfg.clientID, "client-id", defaultClientID, "the minting client's `ID`")
	fs.StringVar(&cfg.clientSecret, "client-secret", defaultClientSecret, "the minting client's `SECRET` (it is printed: it protects nothing)")
	fs.DurationVar(&cfg.lifetime, "lifetime", defaultTokenTTL, "the tokens' lifetime `DURATION`")
	fs.BoolVar(&cfg.opaque, "opaque", false, "issue opaque access tokens, for a service that introspects them (-introspect), instead of JWTs")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %[1]s [flags]                    run a development OpenID provider until interrupted\n"+
			"       %[1]s token -roles ROLE[,ROLE]   mint an access token from the running provider (%[1]s token -h)\n\n%[2]s\n\nflags:\n", name, warning)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	if err := cfg.check(fs, name); err != nil {
		return err
	}
	opts := Options{
		Clients: []Client{{
			ID: cfg.clientID, Secret: cfg.clientSecret, Audience: []string{cfg.audience},
			Opaque: cfg.opaque, Lifetime: cfg.lifetime, Exchange: true, Mint: true,
		}},
		Issuer:           cfg.issuer,
		RolesClaim:       cfg.rolesClaim,
		AllowNonLoopback: cfg.allowNonLoopback,
		Logger:           slog.New(slog.NewTextHandler(stderr, nil)),
	}
	p, err := Start(cfg.addr, opts)
	if err != nil {
		return err
	}
	c.banner(stdout, p, cfg)
	select {
	case <-ctx.Done():
	case <-p.served:
	}
	if err := p.Close(); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "dev-idp: stopped")
	return nil
}

// check refuses an inconsistent provider command line, as usage errors.
func (cfg *serveConfig) check(fs *flag.FlagSet, name string) error {
	host, _, err := net.SplitHostPort(cfg.addr)
	if err != nil {
		return usage(fs, "-addr %q: want HOST:PORT, such as 127.0.0.1:9400", cfg.addr)
	}
	ip := net.ParseIP(host)
	if !cfg.allowNonLoopback && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usage(fs, "-addr %q is not a loopback address: the provider's client secret and keys are known to anyone, "+
			"so it listens on 127.0.0.1, [::1] or localhost; pass -allow-non-loopback as well to listen there on a network you trust entirely", cfg.addr)
	}
	if cfg.issuer == "" && (host == "" || (ip != nil && ip.IsUnspecified())) {
		return usage(fs, "-addr %q listens on every interface: name the URL clients reach the provider at with -issuer (http://idp:9400)", cfg.addr)
	}
	if cfg.issuer != "" {
		if err := checkIssuer(cfg.issuer); err != nil {
			return usage(fs, "-issuer %v", err)
		}
	}
	if cfg.audience == "" {
		return usage(fs, "-audience is empty: name the service tokens are for, as its -audience does (%s)", defaultAudience)
	}
	if err := checkRolesClaim(cfg.rolesClaim); err != nil {
		return usage(fs, "-roles-claim %v", err)
	}
	switch {
	case cfg.clientID == "":
		return usage(fs, "-client-id is empty: the minting client needs an ID (default %s)", defaultClientID)
	case cfg.clientSecret == "":
		return usage(fs, "-client-secret is empty: the minting client needs a secret (default %s)", defaultClientSecret)
	}
	if cfg.lifetime <= 0 {
		return usage(fs, "-lifetime %s: want a positive duration, such as 1h or 15m", cfg.lifetime)
	}
	if fs.NArg() > 0 {
		return usage(fs, "unexpected argument %q: the only subcommand is token (%s token -roles editor)", fs.Arg(0), name)
	}
	return nil
}

// banner tells the developer what the provider is, and how a service and
// a shell use it.
func (c Command) banner(w io.Writer, p *Provider, cfg serveConfig) {
	name := c.name()
	for _, line := range strings.Split(warning, "\n") {
		fmt.Fprintln(w, "dev-idp:", line)
	}
	kind := "JWT access tokens"
	if cfg.opaque {
		kind = "opaque access tokens (introspected)"
	}
	fmt.Fprintf(w, "dev-idp: issuer %s\n", p.Issuer())
	fmt.Fprintf(w, "dev-idp: client %s, secret %s (client credentials; it mints, introspects and exchanges tokens)\n", cfg.clientID, cfg.clientSecret)
	fmt.Fprintf(w, "dev-idp: tokens %s for audience %s, roles in claim %q, valid for %s\n", kind, cfg.audience, cfg.rolesClaim, cfg.lifetime)
	service := []string{"-oidc-issuer", p.Issuer(), "-audience", cfg.audience}
	if cfg.rolesClaim != "roles" {
		service = append(service, "-roles-claim", cfg.rolesClaim)
	}
	const secretFile = "dev-idp.secret"
	if cfg.opaque {
		service = append(service, "-introspect", p.Issuer()+IntrospectionPath, "-introspect-client-id", cfg.clientID, "-introspect-secret-file", secretFile)
	}
	if cfg.opaque {
		fmt.Fprintln(w, "dev-idp: write the client's secret where the service reads it with")
		fmt.Fprintf(w, "    printf %%s %s > %s\n", shellQuote(cfg.clientSecret), secretFile)
	}
	fmt.Fprintln(w, "dev-idp: run the service with")
	fmt.Fprintln(w, "   ", shellLine(service))
	mint := []string{"token", "-roles", "editor"}
	if p.Issuer() != defaultIssuer {
		mint = append(mint, "-issuer", p.Issuer())
	}
	if cfg.clientID != defaultClientID || cfg.clientSecret != defaultClientSecret {
		mint = append(mint, "-client-id", cfg.clientID, "-client-secret", cfg.clientSecret)
	}
	fmt.Fprintln(w, "dev-idp: mint a token (only the token is printed) with")
	fmt.Fprintf(w, "    TOKEN=$(%s %s)\n", name, shellLine(mint))
	fmt.Fprintln(w, "dev-idp: serving until interrupted")
}

// tokenConfig is the token subcommand's command line.
type tokenConfig struct {
	roles, subject, issuer, audience string
	clientID, clientSecret           string
}

func (c Command) token(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name := c.name() + " token"
	var cfg tokenConfig
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.roles, "roles", "", "the token's `ROLES`, comma-separated (editor, or editor,viewer); none: a caller without roles")
	fs.StringVar(&cfg.subject, "subject", defaultSubject, "the token's subject `NAME`")
	fs.StringVar(&cfg.issuer, "issuer", defaultIssuer, "the running provider's issuer `URL`, as it printed it")
	fs.StringVar(&cfg.audience, "audience", "", "the token's audience `ID` (default: the provider's -audience)")
	fs.StringVar(&cfg.clientID, "client-id", defaultClientID, "the minting client's `ID`, as the provider printed it")
	fs.StringVar(&cfg.clientSecret, "client-secret", defaultClientSecret, "the minting client's `SECRET`, as the provider printed it")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s [flags]\n\nMints an access token for the roles from the running development provider\n"+
			"(%s) and prints it alone: TOKEN=$(%s -roles editor).\n\nflags:\n", name, c.name(), name)
		fs.PrintDefaults()
	}
	if err := parse(fs, args); err != nil {
		return err
	}
	opts, err := cfg.options(fs)
	if err != nil {
		return err
	}
	tok, err := RequestToken(ctx, cfg.issuer, cfg.clientID, cfg.clientSecret, opts)
	var down *unreachableError
	if errors.As(err, &down) {
		return fmt.Errorf("dev-idp token: no provider runs at issuer %s (start one with `%s`, or pass the issuer it printed with -issuer): %v", cfg.issuer, c.name(), down.err)
	}
	if err != nil {
		return fmt.Errorf("dev-idp token: %w", err)
	}
	_, err = fmt.Fprintln(stdout, tok)
	return err
}

// options checks the token command line and returns its request.
func (cfg *tokenConfig) options(fs *flag.FlagSet) (TokenOptions, error) {
	if fs.NArg() > 0 {
		return TokenOptions{}, usage(fs, "unexpected argument %q: roles go in -roles ROLE[,ROLE]", fs.Arg(0))
	}
	var opts TokenOptions
	if cfg.roles != "" {
		for i, r := range strings.Split(cfg.roles, ",") {
			r = strings.TrimSpace(r)
			if r == "" {
				return opts, usage(fs, "-roles %q: role %d is empty: want ROLE[,ROLE...], such as editor or editor,viewer", cfg.roles, i+1)
			}
			if err := checkScopeValue(r); err != nil {
				return opts, usage(fs, "-roles %q: role %q %v", cfg.roles, r, err)
			}
			opts.Roles = append(opts.Roles, r)
		}
	}
	if err := checkScopeValue(cfg.subject); err != nil {
		return opts, usage(fs, "-subject %q %v", cfg.subject, err)
	}
	opts.Subject = cfg.subject
	if cfg.audience != "" {
		if err := checkScopeValue(cfg.audience); err != nil {
			return opts, usage(fs, "-audience %q %v", cfg.audience, err)
		}
		opts.Audience = []string{cfg.audience}
	}
	if err := checkIssuer(cfg.issuer); err != nil {
		return opts, usage(fs, "-issuer %v", err)
	}
	for _, f := range []struct{ flag, value string }{{"client-id", cfg.clientID}, {"client-secret", cfg.clientSecret}} {
		if f.value == "" {
			return opts, usage(fs, "-%s is empty: give the one the provider printed", f.flag)
		}
	}
	return opts, nil
}

// parse parses args into fs: -h is [flag.ErrHelp], any other failure (the
// flag package has printed it, with the usage) a usage error.
func parse(fs *flag.FlagSet, args []string) error {
	err := fs.Parse(args)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, flag.ErrHelp):
		return flag.ErrHelp
	default:
		return &usageError{msg: "dev-idp: " + err.Error()}
	}
}

// usage prints a command-line mistake and the usage to fs's output, and
// returns it as a usage error.
func usage(fs *flag.FlagSet, format string, args ...any) error {
	msg := "dev-idp: " + fmt.Sprintf(format, args...)
	fmt.Fprintln(fs.Output(), msg)
	fs.Usage()
	return &usageError{msg: msg}
}

// shellLine joins words into a line a POSIX shell reads back as them.
func shellLine(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = shellQuote(w)
	}
	return strings.Join(quoted, " ")
}

// shellQuote quotes s for a POSIX shell, if it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,:/@%+=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
