package service

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/toolroute/toolroute/authz/devproxy"

	"github.com/toolroute/toolroute/authz/oauth/devidp"

	"go.uber.org/fx"

	"github.com/toolroute/toolroute/registry"
)

// Main runs the service name at version with opts (its tools, with
// server.Tools, and the constructor of their container) as a complete
// microservice: see [Command]. It does not return: it exits with status
// 0 once the service stopped, 1 with one line on standard error when it
// could not start or serve, 2 on a command-line mistake.
//
//	func main() {
//		service.Main("things-mcp", "1.0.0",
//			server.Tools(tools.Registry),
//			fx.Provide(tools.NewDeps), // func(service.Upstreams) *tools.Deps
//		)
//	}
func Main(name, version string, opts ...fx.Option) {
	Command{Name: name, Version: version, Options: opts}.Main()
}

// Command is a service built on the kit: its tools, and what it adds to
// the kit's commands. Only Name and Options are required.
//
// Its commands are
//
//	NAME [serve] [flags]   serve MCP (the default)
//	NAME check [flags]     validate the configuration, policy and tokens without serving
//	NAME routes ...        print the tool → route table, its exports, the visibility matrix
//	NAME dev-idp ...       a local OpenID provider, for trying OAuth mode
//	NAME dev-proxy ...     a local RBAC proxy, for trying -proxy-auth
//
// plus those of Commands. serve and check share their flags, each also
// read from its TOOLROUTE_* environment variable (see [ParseFlags]).
type Command struct {
	// Name names the service: in its MCP implementation info, its log
	// lines, metrics and traces, and its Redis keys.
	Name string
	// Version is the service's version.
	Version string
	// Title and Instructions are the server's (server.Options).
	Title, Instructions string
	// Options are the service's fx options: server.Tools for each
	// registry, and the constructors of the containers. The kit
	// provides [Upstreams], [Config], the service's *slog.Logger and a
	// *permission.Checker to them. routes and check read the tools'
	// tables from a graph of these options alone, which constructs
	// nothing but what an fx.Invoke among them asks for: keep work in
	// constructors, not in invokes.
	Options []fx.Option
	// Policy is the role policy (JSON, the RBAC proxy's shape) used
	// without -policy and -proxy-auth; nil: one of them is required.
	Policy []byte
	// DemoTokens are bearer tokens (JSON, the -tokens shape) used when
	// no -tokens, -oidc-issuer or -proxy-auth is given, announced at
	// start as local-demo credentials; nil: HTTP callers need one of
	// those.
	DemoTokens []byte
	// Embedded are upstreams served in process, on a loopback port, for
	// the service keys that no -upstream names: a demo that runs with no
	// set-up. Each function returns a new handler (one per start).
	Embedded map[string]func() http.Handler
	// Defaults are defaults of the serving flags: a non-zero field of
	// Defaults is used where the command line and the environment give
	// none (e.g. Caller: "viewer").
	Defaults Config
	// Flags, if set, defines the service's own serving flags on fs; they
	// follow the kit's environment rules (TOOLROUTE_ + the name).
	Flags func(fs *flag.FlagSet)
	// Commands are the service's own subcommands, by name.
	Commands map[string]Subcommand
}

// Subcommand is one of a service's own subcommands.
type Subcommand struct {
	// Usage is its entry in the usage text: the command line, a tab, and
	// what it does, e.g. "catalog [-addr ADDR]\tserve the demo catalog
	// alone".
	Usage string
	// Run runs it with the arguments after its name until ctx is done.
	// It may parse them with [ParseFlags]. Returning [ErrUsage] exits
	// with status 2 (after Run printed the mistake).
	Run func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// ErrUsage is a command-line mistake: the command has printed it, with
// its usage; Main exits with status 2.
var ErrUsage = errors.New("usage error")

// Main runs c with the process's arguments, standard streams and
// environment until SIGINT or SIGTERM, and exits as [Main] says.
func (c Command) Main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := c.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
	case errors.Is(err, ErrUsage):
		os.Exit(2)
	default:
		fmt.Fprintf(os.Stderr, "%s: %v\n", c.Name, err)
		os.Exit(1)
	}
}

// Run runs the command args name (serve when args start with a flag or
// are empty) until ctx is done or, over stdio, until the client leaves.
// It reads TOOLROUTE_* variables from the process's environment.
func (c Command) Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if c.Name == "" {
		panic("service: Command.Name is empty")
	}
	sub := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "serve":
		cfg, err := c.parse("serve", args, stderr)
		if err != nil {
			return err
		}
		return c.Serve(ctx, cfg, stdin, stdout, stderr)
	case "check":
		cfg, err := c.parse("check", args, stderr)
		if err != nil {
			return err
		}
		return c.check(cfg, stdout, stderr)
	case "routes":
		return c.routes(args, stdout, stderr)
	case "dev-idp":
		err := devidp.Command{Name: c.Name + " dev-idp"}.Run(ctx, args, stdout, stderr)
		if errors.Is(err, devidp.ErrUsage) {
			return ErrUsage // printed, with the usage
		}
		return err
	case "dev-proxy":
		err := devproxy.Command{Name: c.Name + " dev-proxy"}.Run(ctx, args, stdout, stderr)
		if errors.Is(err, devproxy.ErrUsage) {
			return ErrUsage // printed, with the usage
		}
		return err
	}
	if s, ok := c.Commands[sub]; ok {
		return s.Run(ctx, args, stdout, stderr)
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n", c.Name, sub)
	c.usage(stderr)
	return ErrUsage
}

// usage prints the commands.
func (c Command) usage(w io.Writer) {
	const indent = "\n                          "
	line := func(cmd, what string) { fmt.Fprintf(w, "  %s %s%s%s\n", c.Name, cmd, indent, what) }
	fmt.Fprint(w, "Usage:\n")
	line("[serve] [flags]", "serve MCP (the default)")
	line("check [flags]", "validate the configuration, policy and tokens without serving (exit 0/1)")
	fmt.Fprint(w, strings.ReplaceAll(routesUsage, "NAME", c.Name))
	line("dev-idp [-addr ADDR] | dev-idp token -roles R", "a local OpenID provider for trying OAuth mode; token mints an access token")
	line("dev-proxy -policy FILE -tokens FILE", "a local RBAC proxy for trying -proxy-auth")
	for _, name := range slices.Sorted(maps.Keys(c.Commands)) {
		u := c.Commands[name].Usage
		cmd, what, _ := strings.Cut(u, "\t")
		line(strings.TrimSpace(cmd), strings.TrimSpace(what))
	}
}

// parse parses the serving flags of args and the environment into a
// Config, checked, with the defaults filled in.
func (c Command) parse(sub string, args []string, stderr io.Writer) (Config, error) {
	var cfg Config
	fs := flag.NewFlagSet(c.Name+" "+sub, flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.register(fs)
	if c.Flags != nil {
		c.Flags(fs)
	}
	withForms(fs)
	fs.Usage = func() {
		c.usage(fs.Output())
		fmt.Fprint(fs.Output(), "\nFlags of serve and check (each also from the environment: "+envPrefix+" + the flag in upper snake case, -proxy-auth is "+EnvName("proxy-auth")+", -upstream catalog=URL is "+upstreamEnvPrefix+"CATALOG=URL; the command line wins):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, ErrUsage // the flag package printed it, with the usage
	}
	if fs.NArg() > 0 {
		return cfg, usageError(fs, c.Name, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := applyEnv(fs, os.Environ()); err != nil {
		return cfg, usageError(fs, c.Name, "%v", err)
	}
	cfg.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { cfg.set[f.Name] = true })
	// Visit sees what the environment set too: fs.Set marks it.
	if err := cfg.check(); err != nil {
		return cfg, usageError(fs, c.Name, "%v", err)
	}
	return cfg.withDefaults(c.Defaults), nil
}

// usageError prints a command-line mistake and the usage.
func usageError(fs *flag.FlagSet, name, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), name+": "+format+"\n", args...)
	fs.Usage()
	return ErrUsage
}

// tables are the route tables of the service's registries, read from its
// options without building their containers (see server.Tools).
func (c Command) tables() (registry.RouteTable, error) {
	var tables []registry.RouteTable
	app := fx.New(
		fx.NopLogger,
		fx.Options(c.Options...),
		fx.Invoke(func(p struct {
			fx.In
			Tables []registry.RouteTable `group:"toolroute.tables"`
		}) {
			tables = p.Tables
		}),
	)
	if err := app.Err(); err != nil {
		return registry.RouteTable{}, err
	}
	var all registry.RouteTable
	for _, t := range tables {
		all.Tools = append(all.Tools, t.Tools...)
	}
	slices.SortFunc(all.Tools, func(a, b registry.RouteTableEntry) int { return strings.Compare(a.Name, b.Name) })
	if len(all.Tools) == 0 {
		return all, errors.New("the service has no tools: give its registries with server.Tools(reg) in the Command's options")
	}
	return all, nil
}
