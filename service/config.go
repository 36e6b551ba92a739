package service

import (
	"errors"
	"flag"
	"fmt"
	"maps"
	"net"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/permission"
)

// Config is the whole configuration of a service's serve and check
// commands: what the kit's flags and TOOLROUTE_* variables set. A zero
// field selects its default (given in its comment); [Command.Run] fills
// one from the command line and the environment, and a program may
// build one itself and pass it to [Command.Serve].
type Config struct {
	// Addr is the HTTP listen address (-addr; default 127.0.0.1:8080).
	Addr string
	// Stdio serves MCP over standard input and output instead of HTTP
	// (-stdio).
	Stdio bool
	// Caller is the stdio caller's role (-caller); stdio needs one.
	Caller string
	// Upstreams are the upstream services' origins by service key
	// (-upstream KEY=URL, TOOLROUTE_UPSTREAM_<KEY>=URL). A key the tools
	// need must have one, unless the command embeds that upstream.
	Upstreams map[string]string
	// ProxyAuth is the RBAC proxy's URL (-proxy-auth): it decides instead
	// of a role policy.
	ProxyAuth string
	// PolicyFile is the role policies file (-policy) replacing the
	// command's embedded policy.
	PolicyFile string
	// TokensFile is the bearer tokens file (-tokens).
	TokensFile string
	// ReloadInterval is how often PolicyFile and TokensFile are checked
	// for changes, which are applied once a file has held still for one
	// interval (-reload-interval; default 2s; negative: only on SIGHUP
	// and another replica's announcement).
	ReloadInterval time.Duration
	// Anonymous is the role of HTTP requests without a token (-anonymous;
	// off when empty).
	Anonymous string
	// Redis is the URL of the Redis that replicas share state through
	// (-redis); it needs StateKeyFile.
	Redis string
	// StateKeyFile holds the key signing permission questions, the same
	// on every replica (-state-key-file; with Redis only).
	StateKeyFile string
	// RateLimit is the tool calls per second allowed per caller
	// (-rate-limit; 0 = no limit).
	RateLimit int
	// SDKTransport serves stateless HTTP through go-sdk's own streamable
	// HTTP handler alone, rather than toolroute's transport, which serves
	// plain calls itself with answers byte for byte alike
	// (-sdk-transport; server.HTTPOptions.SDKTransport): the way back
	// should a difference show. HTTP only.
	SDKTransport bool
	// DrainDelay is how long a stopping HTTP server keeps serving with
	// /readyz answering 503 (-drain-delay; default 0).
	DrainDelay time.Duration
	// ListTTL is how long a client may keep a tools/list page (its
	// ttlMs; -list-ttl; default 1m; negative: 0, stale at once).
	ListTTL time.Duration
	// ShutdownTimeout is how long in-flight calls get once the listener
	// closed (-shutdown-timeout; default 10s).
	ShutdownTimeout time.Duration
	// MetricsAddr serves Prometheus metrics at http://MetricsAddr/metrics
	// (-metrics-addr; off when empty).
	MetricsAddr string
	// Audit is the file audit records are appended to (-audit; "-" is
	// standard error; off when empty).
	Audit string
	// OAuth is OAuth mode's configuration (-oidc-issuer and the flags
	// that go with it).
	OAuth OAuth

	// set names the flags given (command line or environment); nil when
	// the Config was built in Go.
	set map[string]bool
	// stateKey is the content of StateKeyFile, once checked.
	stateKey []byte
}

// OAuth is the configuration of OAuth mode: access tokens of an OAuth 2.1
// authorization server identify callers (package authz/oauth).
type OAuth struct {
	// Issuer is the authorization server's issuer URL (-oidc-issuer);
	// empty: OAuth mode is off.
	Issuer string
	// Audience is this server's resource identifier, which a token's
	// audience must contain (-audience).
	Audience string
	// RolesClaim is the claim path holding the caller's roles
	// (-roles-claim; default "roles").
	RolesClaim string
	// PublicURL is the MCP endpoint's public URL, for the protected
	// resource metadata (-public-url; default http://ADDR/mcp).
	PublicURL string
	// Introspect is the introspection endpoint that verifies opaque
	// tokens instead of JWTs (-introspect).
	Introspect string
	// IntrospectClientID and IntrospectSecretFile are this server's
	// client at the introspection endpoint.
	IntrospectClientID, IntrospectSecretFile string
	// UpstreamAudience makes upstream requests carry a token exchanged
	// for that audience (RFC 8693; -upstream-audience).
	UpstreamAudience string
	// ExchangeClientID and ExchangeSecretFile are this server's client
	// for token exchange.
	ExchangeClientID, ExchangeSecretFile string
	// DPoP accepts DPoP-bound tokens with their proofs of possession
	// (RFC 9449) and refuses such tokens presented as bearer tokens
	// (-dpop). With Redis, accepted proofs are recorded there, so that
	// no replica accepts one twice.
	DPoP bool
	// DPoPRequired refuses bearer tokens altogether (-dpop-required).
	DPoPRequired bool
	// ScopesClaim is the claim holding a token's granted scopes
	// (-scopes-claim; default "scope").
	ScopesClaim string
	// ScopePolicyFile is the scope policy (-scope-policy): which scopes
	// the routes need (authz/oauth's ScopePolicy, JSON). Without it no
	// route needs a scope.
	ScopePolicyFile string
	// StepUp lists tools by roles alone and answers a call of a visible
	// tool whose scopes the token lacks with HTTP 403 and a challenge
	// naming them (-step-up); off, such tools are hidden.
	StepUp bool
}

// The defaults of Config's zero fields.
const (
	defaultAddr            = "127.0.0.1:8080"
	defaultShutdownTimeout = 10 * time.Second
	defaultReloadInterval  = 2 * time.Second
	defaultListTTL         = time.Minute
)

// envPrefix starts the environment variable of every flag: -proxy-auth
// is TOOLROUTE_PROXY_AUTH.
const envPrefix = "TOOLROUTE_"

// upstreamEnvPrefix starts the variables of -upstream's keys:
// TOOLROUTE_UPSTREAM_CATALOG=URL is -upstream catalog=URL.
const upstreamEnvPrefix = envPrefix + "UPSTREAM_"

// EnvName is the environment variable of the flag named name:
// TOOLROUTE_ + the name in upper snake case (-proxy-auth is
// TOOLROUTE_PROXY_AUTH).
func EnvName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// upstreamFlag is -upstream: KEY=URL, repeatable; a bare URL names the
// only upstream the tools need.
type upstreamFlag map[string]string

// bareKey is the key of a bare -upstream URL, resolved once the tools'
// service keys are known.
const bareKey = ""

func (u upstreamFlag) String() string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(u)) {
		parts = append(parts, k+"="+u[k])
	}
	return strings.Join(parts, ",")
}

func (u upstreamFlag) Set(v string) error {
	key, raw, ok := strings.Cut(v, "=")
	if !ok || strings.Contains(key, "/") || strings.Contains(key, ":") {
		key, raw = bareKey, v
	}
	if _, dup := u[key]; dup {
		if key == bareKey {
			return errors.New("a bare URL names the only upstream: give several as KEY=URL")
		}
		return fmt.Errorf("upstream %q given twice", key)
	}
	if err := checkOrigin(raw); err != nil {
		return fmt.Errorf("%v (want KEY=URL, e.g. catalog=http://catalog:8081, or a bare URL when the tools need one upstream)", err)
	}
	u[key] = strings.TrimSuffix(raw, "/")
	return nil
}

// checkOrigin accepts an http or https origin without path, query,
// fragment or credentials: request paths are the routes' own, and the
// caller's bearer, an exchanged token or none is what authenticates.
func checkOrigin(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("%q is not a URL", raw)
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("%q: the scheme must be http or https", u.Redacted())
	case u.Host == "":
		return fmt.Errorf("%q: missing host", u.Redacted())
	case u.Path != "" && u.Path != "/", u.RawQuery != "", u.Fragment != "":
		return fmt.Errorf("%q: must be an origin without path, query or fragment (request paths are the routes' own)", u.Redacted())
	case u.User != nil:
		return fmt.Errorf("%q: must not carry credentials", u.Redacted())
	}
	return nil
}

// register defines the kit's flags on fs, bound to c. Defaults stay out
// of c (a zero field is a default), but show in the usage text.
func (c *Config) register(fs *flag.FlagSet) {
	c.Upstreams = map[string]string{}
	fs.StringVar(&c.Addr, "addr", "", "HTTP listen `address` (default "+defaultAddr+")")
	fs.BoolVar(&c.Stdio, "stdio", false, "serve MCP over standard input and output instead of HTTP")
	fs.StringVar(&c.Caller, "caller", "", "the stdio caller's `role`")
	fs.Var(upstreamFlag(c.Upstreams), "upstream", "the upstream service `KEY=URL` (origin only; repeatable; a bare URL when the tools need one upstream; also "+upstreamEnvPrefix+"<KEY>)")
	fs.StringVar(&c.ProxyAuth, "proxy-auth", "", "ask the RBAC proxy at `URL` instead of a role policy")
	fs.StringVar(&c.PolicyFile, "policy", "", "role policies `file` (JSON)")
	fs.StringVar(&c.TokensFile, "tokens", "", "bearer tokens `file` (JSON)")
	fs.DurationVar(&c.ReloadInterval, "reload-interval", 0, "check the -policy and -tokens files for changes this often, and reload them once they held still for one `interval` (default 2s; negative: only on SIGHUP, or when another replica announces a reload through -redis)")
	fs.StringVar(&c.Anonymous, "anonymous", "", "HTTP requests without a token act as `ROLE` (off by default; for local tools that cannot send headers)")
	fs.StringVar(&c.Redis, "redis", "", "share the permission replay guard, remembered answers, the rate limit and cancellations with other replicas through the Redis at `URL` (redis://host:6379/0; needs -state-key-file)")
	fs.StringVar(&c.StateKeyFile, "state-key-file", "", "the `file` holding the key (at least 32 bytes) that signs permission questions, the same on every replica (with -redis only)")
	fs.BoolVar(&c.SDKTransport, "sdk-transport", false, "serve stateless HTTP through go-sdk's own handler alone instead of toolroute's transport (the same answers, at more CPU and memory a call): the way back should a difference show")
	fs.DurationVar(&c.DrainDelay, "drain-delay", 0, "on SIGTERM, keep serving for this `duration` with /readyz answering 503 before closing the listener, so that load balancers notice first")
	fs.DurationVar(&c.ShutdownTimeout, "shutdown-timeout", 0, "then give in-flight calls this `duration` to finish before cancelling them (default 10s)")
	fs.DurationVar(&c.ListTTL, "list-ttl", 0, "how long a client may keep a tools/list page before fetching it again (its ttlMs; listeners of notifications/tools/list_changed are told sooner; default 1m; negative: 0, stale at once)")
	fs.IntVar(&c.RateLimit, "rate-limit", 0, "at most `N` tool calls per second per caller, in bursts of up to N (across replicas with -redis); 0 = no limit")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://`ADDR`/metrics, on a listener of their own (off by default)")
	fs.StringVar(&c.Audit, "audit", "", "append audit records (JSON lines) to `FILE` (\"-\": standard error)")
	o := &c.OAuth
	fs.StringVar(&o.Issuer, "oidc-issuer", "", "OAuth mode: accept access tokens of the authorization server whose issuer is `URL` (excludes -tokens and -proxy-auth)")
	fs.StringVar(&o.Audience, "audience", "", "with -oidc-issuer: this server's resource identifier `ID`, which a token's audience must contain")
	fs.StringVar(&o.RolesClaim, "roles-claim", "", "with -oidc-issuer: the claim `PATH` holding the caller's roles (roles, realm_access.roles, groups, scope; default "+oauth.DefaultRolesClaim+")")
	fs.StringVar(&o.PublicURL, "public-url", "", "with -oidc-issuer: the MCP endpoint's public `URL`, for the protected resource metadata (default http://ADDR/mcp)")
	fs.StringVar(&o.Introspect, "introspect", "", "with -oidc-issuer: verify opaque tokens at the introspection endpoint `URL` instead of JWTs")
	fs.StringVar(&o.IntrospectClientID, "introspect-client-id", "", "with -introspect: this server's client `ID` at the introspection endpoint")
	fs.StringVar(&o.IntrospectSecretFile, "introspect-secret-file", "", "with -introspect: the `FILE` holding that client's secret")
	fs.StringVar(&o.UpstreamAudience, "upstream-audience", "", "with -oidc-issuer: exchange the caller's token for one of audience `ID` for upstream requests (RFC 8693); an embedded upstream then checks it")
	fs.StringVar(&o.ExchangeClientID, "exchange-client-id", "", "with -upstream-audience: this server's client `ID` for token exchange")
	fs.StringVar(&o.ExchangeSecretFile, "exchange-secret-file", "", "with -upstream-audience: the `FILE` holding that client's secret")
	fs.BoolVar(&o.DPoP, "dpop", false, "with -oidc-issuer: accept DPoP-bound tokens with their proofs (RFC 9449) and refuse them as bearer tokens; with -redis, replicas share the proofs seen")
	fs.StringVar(&o.ScopesClaim, "scopes-claim", "", "with -oidc-issuer: the claim `PATH` holding a token's granted scopes (scope, scp; default "+oauth.DefaultScopesClaim+")")
	fs.StringVar(&o.ScopePolicyFile, "scope-policy", "", "with -oidc-issuer: the `FILE` saying which scopes routes need (JSON: rules of scope, path, methods; implies); a tool needs every scope of its routes")
	fs.BoolVar(&o.StepUp, "step-up", false, "with -scope-policy: list tools by roles alone and answer a call whose token lacks the tool's scopes with HTTP 403 naming them (step-up), instead of hiding the tool; a challenge tells the caller the tool exists")
	fs.BoolVar(&o.DPoPRequired, "dpop-required", false, "with -dpop: refuse bearer tokens, so that every request proves possession of its token's key")
}

// withForms makes every bool, int and duration flag of fs refuse a value
// it cannot parse by naming the accepted forms, and quote the value in
// the error: such values are never credentials (string flags keep their
// own errors, which never quote a value).
func withForms(fs *flag.FlagSet) {
	fs.VisitAll(func(f *flag.Flag) {
		switch f.Value.(type) {
		case interface{ IsBoolFlag() bool }:
			f.Value = boolForms{formsValue{f.Value, "true or false (also 1, 0, t, f)"}}
		case flag.Getter:
			switch f.Value.(flag.Getter).Get().(type) {
			case int:
				f.Value = formsValue{f.Value, "a whole number, such as 0 or 20"}
			case time.Duration:
				f.Value = formsValue{f.Value, "a duration, such as 500ms, 10s or 1m30s"}
			}
		}
	})
}

type formsValue struct {
	flag.Value
	forms string
}

func (v formsValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return fmt.Errorf("want %s", v.forms)
	}
	return nil
}

// quotable tells applyEnv that the value may be quoted in its error.
func (formsValue) quotable() {}

type boolForms struct{ formsValue }

func (boolForms) IsBoolFlag() bool { return true }

// oauthFlags are the flags that need -oidc-issuer, with the OAuth field
// each sets (given reads a Config built in Go by them).
var oauthFlags = []struct{ name, field string }{
	{"audience", "Audience"}, {"roles-claim", "RolesClaim"}, {"public-url", "PublicURL"},
	{"introspect", "Introspect"}, {"introspect-client-id", "IntrospectClientID"}, {"introspect-secret-file", "IntrospectSecretFile"},
	{"upstream-audience", "UpstreamAudience"}, {"exchange-client-id", "ExchangeClientID"}, {"exchange-secret-file", "ExchangeSecretFile"},
	{"dpop", "DPoP"}, {"dpop-required", "DPoPRequired"},
	{"scopes-claim", "ScopesClaim"}, {"scope-policy", "ScopePolicyFile"}, {"step-up", "StepUp"},
}

// ParseFlags parses args into fs, then sets every flag the command line
// left unset from its TOOLROUTE_* variable (see [EnvName]) in environ
// ("KEY=value" pairs, as os.Environ gives them): the command line wins,
// and an empty variable counts as unset. A TOOLROUTE_ variable that names
// no flag of fs is an error (a misspelt setting must not be ignored
// silently), and so is a value the flag refuses, naming the variable and
// never quoting the value (it may be a credential). A service's own
// subcommands parse their flags with it, to follow the same rules.
func ParseFlags(fs *flag.FlagSet, args []string, environ []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	_, err := applyEnv(fs, environ)
	return err
}

// applyEnv is ParseFlags's environment half; it returns the names of the
// flags it set.
func applyEnv(fs *flag.FlagSet, environ []string) ([]string, error) {
	onCommandLine := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { onCommandLine[f.Name] = true })
	byVar := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byVar[EnvName(f.Name)] = f })
	upstream := fs.Lookup("upstream")
	var (
		errs []error
		set  []string
	)
	for _, kv := range environ {
		k, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(k, envPrefix) {
			continue
		}
		f := byVar[k]
		if f == nil && upstream != nil && strings.HasPrefix(k, upstreamEnvPrefix) && len(k) > len(upstreamEnvPrefix) {
			// TOOLROUTE_UPSTREAM_<KEY>=URL: the key in lower case, "_"
			// as "-" (service keys are names like "catalog-api").
			if v == "" || onCommandLine["upstream"] {
				continue
			}
			key := strings.ToLower(strings.ReplaceAll(k[len(upstreamEnvPrefix):], "_", "-"))
			if err := upstream.Value.Set(key + "=" + v); err != nil {
				errs = append(errs, fmt.Errorf("environment variable %s (-upstream %s=URL): %v", k, key, err))
				continue
			}
			set = append(set, "upstream")
			continue
		}
		switch {
		case f == nil:
			errs = append(errs, fmt.Errorf("environment variable %s names no flag (the variables are %s + a flag's name in upper snake case: %s)", k, envPrefix, strings.Join(slices.Sorted(maps.Keys(byVar)), ", ")))
		case v == "" || onCommandLine[f.Name]:
		default:
			if err := fs.Set(f.Name, v); err != nil {
				if _, ok := f.Value.(interface{ quotable() }); ok {
					err = fmt.Errorf("%q: %v", v, err)
				}
				errs = append(errs, fmt.Errorf("environment variable %s (-%s): %v", k, f.Name, err))
				continue
			}
			set = append(set, f.Name)
		}
	}
	return set, errors.Join(errs...)
}

// given reports whether the flag name was given; for a Config built in
// Go, whether its field differs from the zero value.
func (c *Config) given(name string) bool {
	if c.set != nil {
		return c.set[name]
	}
	switch name {
	case "addr":
		return c.Addr != ""
	case "caller":
		return c.Caller != ""
	case "drain-delay":
		return c.DrainDelay != 0
	case "shutdown-timeout":
		return c.ShutdownTimeout != 0
	case "reload-interval":
		return c.ReloadInterval != 0
	}
	for _, f := range oauthFlags {
		if name == f.name {
			return !reflect.ValueOf(c.OAuth).FieldByName(f.field).IsZero()
		}
	}
	return false
}

// withDefaults fills c's zero fields from d's, then the kit's defaults.
func (c Config) withDefaults(d Config) Config {
	fill(reflect.ValueOf(&c).Elem(), reflect.ValueOf(d))
	if c.Addr == "" {
		c.Addr = defaultAddr
	}
	if c.ShutdownTimeout == 0 {
		c.ShutdownTimeout = defaultShutdownTimeout
	}
	if c.ReloadInterval == 0 {
		c.ReloadInterval = defaultReloadInterval
	}
	if c.ListTTL == 0 {
		c.ListTTL = defaultListTTL
	}
	if c.OAuth.RolesClaim == "" {
		c.OAuth.RolesClaim = oauth.DefaultRolesClaim
	}
	return c
}

// fill sets every zero exported field of dst (a struct) to src's.
func fill(dst, src reflect.Value) {
	for i := range dst.NumField() {
		f := dst.Type().Field(i)
		if !f.IsExported() {
			continue
		}
		d, s := dst.Field(i), src.Field(i)
		switch {
		case f.Type.Kind() == reflect.Struct:
			fill(d, s)
		case f.Type.Kind() == reflect.Map:
			if d.Len() == 0 && s.Len() > 0 {
				d.Set(s)
			}
		case d.IsZero():
			d.Set(s)
		}
	}
}

// check refuses inconsistent settings, as one line each that names the
// flags and the way out. It runs before the defaults are filled in, so
// that what was given can be told from what was not; check also reads
// the state key file.
func (c *Config) check() error {
	switch {
	case c.ProxyAuth != "" && c.PolicyFile != "":
		return errors.New("-proxy-auth and -policy exclude each other: the proxy's policy decides")
	case c.ProxyAuth != "" && c.Anonymous != "":
		return errors.New("-anonymous needs a role policy: with -proxy-auth the proxy judges bearer tokens, and a request without one has none to judge")
	case c.Stdio && c.Anonymous != "":
		return errors.New("-anonymous applies to HTTP only; over stdio the caller is -caller")
	case c.Stdio && c.given("addr"):
		return errors.New("-addr applies to HTTP only; remove it or -stdio")
	case !c.Stdio && c.given("caller"):
		return errors.New("-caller applies to -stdio only; HTTP callers come from their tokens")
	case c.given("caller") && c.Caller == "":
		return errors.New("-caller must name a role")
	case c.DrainDelay < 0 || c.ShutdownTimeout < 0 || (c.given("shutdown-timeout") && c.ShutdownTimeout == 0):
		return errors.New("-drain-delay must not be negative, -shutdown-timeout must be positive")
	case c.Stdio && c.given("drain-delay"):
		return errors.New("-drain-delay applies to HTTP only")
	case c.Stdio && c.SDKTransport:
		return errors.New("-sdk-transport applies to HTTP only; over stdio there is no HTTP transport to choose")
	case c.given("reload-interval") && c.PolicyFile == "" && c.TokensFile == "":
		return errors.New("-reload-interval needs -policy or -tokens: it is how often their files are checked for changes")
	case c.RateLimit < 0:
		return errors.New("-rate-limit must be 0 (off) or a positive number of calls per second")
	case c.Redis != "" && c.StateKeyFile == "":
		return errors.New("-redis needs -state-key-file: replicas must sign permission questions with one key, or a question asked on one cannot be answered on another")
	case c.Redis == "" && c.StateKeyFile != "":
		return errors.New("-state-key-file needs -redis: replicas sharing a key must share the replay guard too, or an answer used on one could be used again on another")
	}
	for k, u := range c.Upstreams {
		if err := checkOrigin(u); err != nil {
			return fmt.Errorf("-upstream %s: %v", k, err)
		}
	}
	if c.Redis != "" {
		if _, err := redisOptions(c.Redis); err != nil {
			return fmt.Errorf("-redis: %v", err)
		}
		var err error
		if c.stateKey, err = permission.ReadKeyFile(c.StateKeyFile); err != nil {
			return fmt.Errorf("-state-key-file: %v", err)
		}
	}
	if c.MetricsAddr != "" {
		if _, _, err := net.SplitHostPort(c.MetricsAddr); err != nil {
			return fmt.Errorf("-metrics-addr %q: %v", c.MetricsAddr, err)
		}
	}
	if c.ProxyAuth != "" {
		if u, err := url.Parse(c.ProxyAuth); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-proxy-auth: %q is not an http(s) URL", c.ProxyAuth)
		}
	}
	return c.checkOAuth()
}

// checkOAuth refuses inconsistent OAuth settings and fills in the
// default public URL.
func (c *Config) checkOAuth() error {
	o := &c.OAuth
	if o.Issuer == "" {
		for _, f := range oauthFlags {
			if c.given(f.name) {
				return fmt.Errorf("-%s needs -oidc-issuer", f.name)
			}
		}
		return nil
	}
	switch {
	case c.TokensFile != "":
		return errors.New("-oidc-issuer and -tokens exclude each other: callers come from the issuer's tokens")
	case c.ProxyAuth != "":
		return errors.New("-oidc-issuer and -proxy-auth exclude each other: with an RBAC proxy, the proxy judges bearer tokens")
	case c.Stdio:
		return errors.New("-oidc-issuer applies to HTTP only; over stdio the caller is -caller")
	case o.Audience == "":
		return errors.New("-oidc-issuer needs -audience: the identifier tokens for this server carry in their audience")
	case o.Introspect == "" && (o.IntrospectClientID != "" || o.IntrospectSecretFile != ""):
		return errors.New("-introspect-client-id and -introspect-secret-file need -introspect")
	case o.Introspect != "" && (o.IntrospectClientID == "" || o.IntrospectSecretFile == ""):
		return errors.New("-introspect needs -introspect-client-id and -introspect-secret-file")
	case o.UpstreamAudience == "" && (o.ExchangeClientID != "" || o.ExchangeSecretFile != ""):
		return errors.New("-exchange-client-id and -exchange-secret-file need -upstream-audience")
	case o.UpstreamAudience != "" && (o.ExchangeClientID == "" || o.ExchangeSecretFile == ""):
		return errors.New("-upstream-audience needs -exchange-client-id and -exchange-secret-file")
	case o.StepUp && o.ScopePolicyFile == "":
		return errors.New("-step-up needs -scope-policy: without it no tool needs a scope to challenge")
	case o.DPoPRequired && !o.DPoP:
		return errors.New("-dpop-required needs -dpop")
	case o.DPoP && o.Introspect != "":
		return errors.New("-dpop works with JWT access tokens only, not with -introspect: the key a token is bound to is read from its verified claims before the request is served, which for an opaque token would mean an introspection per stranger's request")
	}
	for _, f := range []struct{ name, value string }{{"oidc-issuer", o.Issuer}, {"public-url", o.PublicURL}, {"introspect", o.Introspect}} {
		if f.value == "" {
			continue
		}
		if u, err := url.Parse(f.value); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("-%s: %q is not an http(s) URL", f.name, f.value)
		}
	}
	if o.PublicURL == "" {
		addr := c.Addr
		if addr == "" {
			addr = defaultAddr
		}
		host, port, err := net.SplitHostPort(addr)
		if err != nil || port == "0" {
			return fmt.Errorf("-oidc-issuer with -addr %s needs -public-url: the MCP endpoint's URL cannot be derived from it", addr)
		}
		if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
			host = "localhost"
		}
		o.PublicURL = "http://" + net.JoinHostPort(host, port) + "/mcp"
	}
	return nil
}
