package service

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"go.uber.org/fx"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/registry"
	"github.com/toolroute/toolroute/server"
	"github.com/toolroute/toolroute/upstream"
)

// MaxConns bounds the connections an upstream client opens to its
// upstream at once; as many stay open when idle. Requests beyond it wait
// for a connection (within their context's deadline) rather than flood
// the upstream.
const MaxConns = 256

// Upstreams are the clients of the upstream services the tools call, by
// service key: one for every key a tool declares. The kit provides them
// in the fx graph; a tools package's container embeds them, and is then
// the upstream.Clients of typed upstream calls (upstream.Forward,
// upstream.Call):
//
//	type Deps struct{ service.Upstreams }
//
//	fx.Provide(func(up service.Upstreams) *tools.Deps { return &tools.Deps{Upstreams: up} })
//
// A container that calls its upstreams with a client of its own takes
// [Upstreams.URL] and [Upstreams.Client].
type Upstreams struct {
	byKey  map[string]upstreamClient
	logger *slog.Logger
}

type upstreamClient struct {
	url      string
	client   *http.Client
	embedded bool
}

// URL is the origin of the upstream service key ("http://host:port",
// no trailing slash). It panics if no tool declares key: a container
// asking for an upstream its tools do not declare is a programming
// error, and the start must not go on.
func (u Upstreams) URL(key string) string { return u.get(key).url }

// Client is the HTTP client of the upstream service key. Its transport
// checks every request against the calling tool's routes and the
// caller's rights before it leaves (authz.Transport, pinned to the
// upstream's origin), sends the token the configuration says (a token
// exchanged for -upstream-audience in OAuth mode, none otherwise in
// OAuth mode, the caller's bearer with static tokens or an RBAC proxy),
// records a client span when telemetry is on, and pools up to
// [MaxConns] connections. It panics like [Upstreams.URL].
func (u Upstreams) Client(key string) *http.Client { return u.get(key).client }

var _ upstream.Clients = Upstreams{}

// Upstream returns the origin and client of the upstream service key
// (see [Upstreams.URL] and [Upstreams.Client]): Upstreams is an
// upstream.Clients. For a key no tool declares it returns "" and nil,
// which a typed call reports as "upstream unavailable", the cause
// logged: it is asked at call time, when a panic would only end the
// call.
func (u Upstreams) Upstream(key string) (origin string, client *http.Client) {
	up, ok := u.byKey[key]
	if !ok {
		return "", nil
	}
	return up.url, up.client
}

// Logger returns the service's logger (redacting: no bearer token
// reaches it), where typed upstream calls log the causes of failed
// requests; nil for the zero Upstreams.
func (u Upstreams) Logger() *slog.Logger { return u.logger }

// Keys are the service keys, sorted.
func (u Upstreams) Keys() []string { return slices.Sorted(maps.Keys(u.byKey)) }

func (u Upstreams) get(key string) upstreamClient {
	up, ok := u.byKey[key]
	if !ok {
		panic(fmt.Sprintf("service: no upstream %q: the tools declare %s; declare the service key on a tool (tool.Tool.ServiceKey) or ask for one of those", key, quoted(u.Keys())))
	}
	return up
}

func quoted(keys []string) string {
	if len(keys) == 0 {
		return "none"
	}
	q := make([]string, len(keys))
	for i, k := range keys {
		q[i] = fmt.Sprintf("%q", k)
	}
	return strings.Join(q, ", ")
}

// serviceKeys are the service keys the tables' tools declare, with a
// tool that needs each (for messages).
func serviceKeys(tables []registry.RouteTable) map[string]string {
	keys := map[string]string{}
	for _, t := range tables {
		for _, e := range t.Tools {
			if e.ServiceKey != "" {
				if _, ok := keys[e.ServiceKey]; !ok {
					keys[e.ServiceKey] = e.Name
				}
			}
		}
	}
	return keys
}

// resolveUpstreams checks configured against the keys the tools need and
// the command's embedded upstreams, and returns the configured origin of
// each key ("" for an embedded one). A bare URL names the only key.
func resolveUpstreams(configured map[string]string, needed map[string]string, embedded map[string]func() http.Handler) (map[string]string, error) {
	out := map[string]string{}
	names := slices.Sorted(maps.Keys(needed))
	for k, u := range configured {
		if k == bareKey {
			if len(needed) != 1 {
				return nil, fmt.Errorf("-upstream %s: a bare URL names the only upstream, but the tools need %d (%s): give each as -upstream KEY=URL", u, len(needed), quoted(names))
			}
			k = names[0]
			if _, dup := configured[k]; dup {
				return nil, fmt.Errorf("-upstream: %q given twice (once as a bare URL)", k)
			}
		}
		if _, ok := needed[k]; !ok {
			return nil, fmt.Errorf("-upstream %s=%s: no tool needs the service %q (the tools need %s)", k, u, k, quoted(names))
		}
		out[k] = u
	}
	for _, k := range names {
		if _, ok := out[k]; ok {
			continue
		}
		if embedded[k] != nil {
			out[k] = ""
			continue
		}
		return nil, fmt.Errorf("tool %s needs the upstream service %q: give its URL with -upstream %s=URL or %s%s=URL", needed[k], k, k, upstreamEnvPrefix, strings.ToUpper(strings.ReplaceAll(k, "-", "_")))
	}
	return out, nil
}

// newTransport is the base transport of an upstream client:
// [http.DefaultTransport]'s settings (proxy from the environment, dial,
// TLS and idle timeouts, HTTP/2) with a connection pool sized to a
// service's concurrency rather than to its 2 idle connections per host:
// with 2, a service serving 200 concurrent calls opens a connection for
// most requests and closes it after, leaving thousands of sockets in
// TIME_WAIT.
func newTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxConnsPerHost = MaxConns
	t.MaxIdleConnsPerHost = MaxConns
	t.MaxIdleConns = MaxConns
	return t
}

// buildUpstreams starts the embedded upstreams (on loopback ports, from
// start to stop) and builds every key's client.
func (k *kit) buildUpstreams(lc fx.Lifecycle) (Upstreams, error) {
	u := Upstreams{byKey: map[string]upstreamClient{}, logger: k.logger}
	for _, key := range slices.Sorted(maps.Keys(k.upstreams)) {
		origin, embedded := k.upstreams[key], k.upstreams[key] == ""
		switch {
		case embedded && k.dry:
			origin = "http://embedded.invalid"
		case embedded:
			var err error
			if origin, err = k.embed(lc, key); err != nil {
				return Upstreams{}, err
			}
		}
		var base http.RoundTripper = newTransport()
		if k.acc.oauth != nil {
			base = k.acc.oauth.upstream(base)
		}
		rt := authz.Transport(base, key, origin, k.acc.upstreamAuthorizer(), authz.Options{Logger: k.logger})
		if k.obs != nil {
			rt = k.obs.tel.Transport(rt, key)
		}
		u.byKey[key] = upstreamClient{url: origin, client: &http.Client{Transport: rt}, embedded: embedded}
	}
	k.up = u
	return u, nil
}

// embed serves the command's embedded upstream key on a loopback port:
// behind the exchanged-token check in OAuth mode with token exchange, so
// that the exchange is exercised end to end.
func (k *kit) embed(lc fx.Lifecycle, key string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("embedded upstream %q: %w", key, err)
	}
	srv := &http.Server{
		Handler:           k.acc.oauth.guardUpstream(k.cmd.Embedded[key]()),
		ReadHeaderTimeout: 10 * time.Second,
		ErrorLog:          slog.NewLogLogger(k.logger.Handler(), slog.LevelWarn),
	}
	lc.Append(fx.Hook{
		OnStart: func(context.Context) error {
			go func() {
				if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
					k.logger.Error(k.cmd.Name+": embedded upstream stopped", slog.String("service", key), slog.Any("error", err))
				}
			}()
			return nil
		},
		OnStop: func(ctx context.Context) error { return srv.Shutdown(ctx) },
	})
	return "http://" + ln.Addr().String(), nil
}

// upstreamService is key's server.Service: warming it checks that the
// upstream accepts connections, so that a wrong -upstream fails the
// start, naming the service.
func upstreamService(key string) func(Upstreams) (server.Service, error) {
	return func(u Upstreams) (server.Service, error) {
		origin := u.URL(key)
		pu, err := url.Parse(origin)
		if err != nil {
			return server.Service{}, err
		}
		port := pu.Port()
		if port == "" {
			port = map[string]string{"http": "80", "https": "443"}[pu.Scheme]
		}
		addr := net.JoinHostPort(pu.Hostname(), port)
		return server.Service{
			Key: key,
			Warm: func(ctx context.Context) error {
				var d net.Dialer
				c, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					return fmt.Errorf("the upstream %q at %s does not accept connections: %w", key, origin, err)
				}
				return c.Close()
			},
		}, nil
	}
}
