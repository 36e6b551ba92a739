package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/example-service/catalog"
)

// catalogUsage is the usage of the catalog subcommand.
const catalogUsage = `  example-service catalog -addr ADDR      serve the demo catalog API alone (the upstream that replicas share)
`

// errUsage marks a command-line mistake (exit status 2); the flag package
// has printed the details.
var errUsage = errors.New("usage error")

// config is the parsed command line of the serving command.
type config struct {
	addr               string
	stdio              bool
	callerRole         string
	upstream           string // "" = the embedded catalog
	proxyAuth          string // "" = a policy
	policyFile         string // "" = the embedded policy
	tokensFile         string // "" = the demo tokens (or, with proxyAuth, any token the proxy knows)
	anonymous          string // "" = off
	confirmDestructive bool
	redisURL           string // "" = nothing shared: every store in memory, per process
	stateKeyFile       string // "" = a random key per process
	stateKey           []byte // read from stateKeyFile
	rateLimit          int    // calls per second per caller; 0 = off
	drainDelay         time.Duration
	shutdownTimeout    time.Duration
	telemetry          telemetryConfig
	oauth              oauthConfig
}

// run is the whole command: "routes" prints the route table or a role
// policy; anything else parses the flags and serves until ctx is done
// (or, over stdio, until the client leaves).
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "routes" {
		return routes(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "catalog" {
		return serveCatalog(ctx, args[1:], stderr)
	}
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdin, stdout, stderr)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("example-service", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.addr, "addr", "127.0.0.1:8080", "HTTP listen `address`")
	fs.BoolVar(&cfg.stdio, "stdio", false, "serve MCP over standard input and output instead of HTTP")
	fs.StringVar(&cfg.callerRole, "caller", "viewer", "the stdio caller's `role`")
	fs.StringVar(&cfg.upstream, "upstream", "", "the catalog API's `URL` (origin only); default: an embedded catalog on a loopback port")
	fs.StringVar(&cfg.proxyAuth, "proxy-auth", "", "ask the RBAC proxy at `URL` instead of a role policy")
	fs.StringVar(&cfg.policyFile, "policy", "", "role policies `file` (JSON) replacing the embedded ones")
	fs.StringVar(&cfg.tokensFile, "tokens", "", "bearer tokens `file` (JSON) replacing the demo tokens")
	fs.StringVar(&cfg.anonymous, "anonymous", "", "HTTP requests without a token act as `ROLE` (off by default; for local tools that cannot send headers)")
	fs.BoolVar(&cfg.confirmDestructive, "confirm-destructive", false, "delete_item asks the user to confirm each deletion")
	fs.StringVar(&cfg.redisURL, "redis", "", "share the permission replay guard, remembered answers, the rate limit and cancellations with other replicas through the Redis at `URL` (redis://host:6379/0; needs -state-key-file)")
	fs.StringVar(&cfg.stateKeyFile, "state-key-file", "", "the `file` holding the key (at least 32 bytes) that signs permission questions, the same on every replica (with -redis only)")
	fs.DurationVar(&cfg.drainDelay, "drain-delay", 0, "on SIGTERM, keep serving for this `duration` with /readyz answering 503 before closing the listener, so that load balancers notice first")
	fs.DurationVar(&cfg.shutdownTimeout, "shutdown-timeout", 10*time.Second, "then give in-flight calls this `duration` to finish before cancelling them")
	fs.IntVar(&cfg.rateLimit, "rate-limit", 0, "at most `N` tool calls per second per caller, in bursts of up to N (across replicas with -redis); 0 = no limit")
	cfg.telemetry.register(fs)
	cfg.oauth.register(fs)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), "Usage:\n  example-service [flags]                 serve the catalog's MCP tools\n"+routesUsage+catalogUsage+"\nFlags (each also from the environment: "+envPrefix+" + the flag in upper snake case, -proxy-auth is "+envName("proxy-auth")+"; the command line wins):\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, err
		}
		return cfg, errUsage
	}
	if fs.NArg() > 0 {
		return cfg, usageError(fs, "unexpected argument %q", fs.Arg(0))
	}
	if _, err := applyEnv(fs, os.Environ()); err != nil {
		return cfg, usageError(fs, "%v", err)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	switch {
	case cfg.proxyAuth != "" && cfg.policyFile != "":
		return cfg, usageError(fs, "-proxy-auth and -policy exclude each other: the proxy's policy decides")
	case cfg.proxyAuth != "" && cfg.anonymous != "":
		return cfg, usageError(fs, "-anonymous needs a role policy: with -proxy-auth the proxy judges bearer tokens, and a request without one has none to judge")
	case cfg.stdio && cfg.anonymous != "":
		return cfg, usageError(fs, "-anonymous applies to HTTP only; over stdio the caller is -caller")
	case cfg.stdio && set["addr"]:
		return cfg, usageError(fs, "-addr applies to HTTP only; remove it or -stdio")
	case !cfg.stdio && set["caller"]:
		return cfg, usageError(fs, "-caller applies to -stdio only; HTTP callers come from their tokens")
	case cfg.callerRole == "":
		return cfg, usageError(fs, "-caller must name a role")
	case cfg.drainDelay < 0 || cfg.shutdownTimeout <= 0:
		return cfg, usageError(fs, "-drain-delay must not be negative, -shutdown-timeout must be positive")
	case cfg.stdio && set["drain-delay"]:
		return cfg, usageError(fs, "-drain-delay applies to HTTP only")
	case cfg.rateLimit < 0:
		return cfg, usageError(fs, "-rate-limit must be 0 (off) or a positive number of calls per second")
	case cfg.redisURL != "" && cfg.stateKeyFile == "":
		return cfg, usageError(fs, "-redis needs -state-key-file: replicas must sign permission questions with one key, or a question asked on one cannot be answered on another")
	case cfg.redisURL == "" && cfg.stateKeyFile != "":
		return cfg, usageError(fs, "-state-key-file needs -redis: replicas sharing a key must share the replay guard too, or an answer used on one could be used again on another")
	}
	if cfg.redisURL != "" {
		if err := checkRedisURL(cfg.redisURL); err != nil {
			return cfg, usageError(fs, "-redis: %v", err)
		}
		var err error
		if cfg.stateKey, err = permission.ReadKeyFile(cfg.stateKeyFile); err != nil {
			return cfg, usageError(fs, "-state-key-file: %v", err)
		}
	}
	if err := cfg.telemetry.check(); err != nil {
		return cfg, usageError(fs, "%v", err)
	}
	if err := cfg.oauth.check(fs, set, &cfg); err != nil {
		return cfg, err
	}
	if cfg.upstream != "" {
		u, err := url.Parse(cfg.upstream)
		if err == nil {
			err = catalog.CheckBaseURL(u)
		}
		if err != nil {
			return cfg, usageError(fs, "-upstream: %v", err)
		}
		cfg.upstream = strings.TrimSuffix(cfg.upstream, "/")
	}
	if cfg.proxyAuth != "" {
		if u, err := url.Parse(cfg.proxyAuth); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return cfg, usageError(fs, "-proxy-auth: %q is not an http(s) URL", cfg.proxyAuth)
		}
	}
	return cfg, nil
}

func usageError(fs *flag.FlagSet, format string, args ...any) error {
	fmt.Fprintf(fs.Output(), "example-service: "+format+"\n", args...)
	fs.Usage()
	return errUsage
}

func writeJSON(w io.Writer, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(data, '\n'))
	return err
}

// readFile reads a configuration file named by a flag.
func readFile(flagName, path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-%s: %w", flagName, err)
	}
	return data, nil
}
