package resultcache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/tool"
	"github.com/toolroute/toolroute/upstream"
)

// A Store keeps encoded results by key. Its methods must be safe for
// concurrent use. An error of the store is logged and the call served as
// if it missed: the cache never fails a call.
type Store interface {
	// Get returns the value stored under key, and whether there is one.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Set stores value under key for ttl (then it may be dropped).
	Set(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// Options configures [New]. Every zero field selects the documented
// default.
type Options struct {
	// Store keeps the results. nil selects an in-process store bounded
	// by MaxEntries and MaxBytes.
	Store Store
	// MaxEntries bounds the in-process store's entries. 0 selects 10,000.
	MaxEntries int
	// MaxBytes bounds the in-process store's bytes (keys and encoded
	// results). 0 selects 64 MiB. A result larger than a sixteenth of it
	// is not cached, in any store.
	MaxBytes int64
	// MeterProvider makes the instruments. nil selects the global one.
	MeterProvider metric.MeterProvider
	// Logger receives the store's errors. nil selects [slog.Default].
	Logger *slog.Logger
	// Now is the clock. nil selects [time.Now].
	Now func() time.Time
	// Scope, if set, is part of every call's key: a result cached under
	// one scope never answers a call of another. The service kit gives
	// the digest of the role policy the request decides under, so that
	// after a policy reload no result cached under the old policy answers
	// (on any replica sharing the store: the digest is the file's).
	Scope func(context.Context) string
}

const (
	defaultMaxEntries = 10_000
	defaultMaxBytes   = 64 << 20
)

// The names of the instruments.
const (
	MetricLookups   = "toolroute.resultcache.lookups"
	MetricEvictions = "toolroute.resultcache.evictions"
)

// AttrResult is the attribute of [MetricLookups]: "hit", "miss" or
// "stale" (an expired result answered because the upstream was down).
const AttrResult = attribute.Key("toolroute.resultcache.result")

// Cache is a result cache. It must be created with [New].
type Cache struct {
	store   Store
	log     *slog.Logger
	now     func() time.Time
	scope   func(context.Context) string
	lookups metric.Int64Counter
	hit     metric.MeasurementOption
	miss    metric.MeasurementOption
	stale   metric.MeasurementOption
	maxSize int // results larger are not stored
}

// New returns a cache configured by opts. It fails only if the meter
// provider refuses an instrument.
func New(opts Options) (*Cache, error) {
	c := &Cache{store: opts.Store, log: opts.Logger, now: opts.Now, scope: opts.Scope}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.now == nil {
		c.now = time.Now
	}
	mp := opts.MeterProvider
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/toolroute/toolroute/resultcache")
	var err error
	if c.lookups, err = m.Int64Counter(MetricLookups, metric.WithUnit("{lookup}"),
		metric.WithDescription("Lookups in the result cache of read-only tools, by result (hit, miss, stale).")); err != nil {
		return nil, fmt.Errorf("resultcache: %w", err)
	}
	evictions, err := m.Int64Counter(MetricEvictions, metric.WithUnit("{entry}"),
		metric.WithDescription("Results the in-process result cache dropped before their time to stay within its bounds."))
	if err != nil {
		return nil, fmt.Errorf("resultcache: %w", err)
	}
	c.hit = metric.WithAttributeSet(attribute.NewSet(AttrResult.String("hit")))
	c.miss = metric.WithAttributeSet(attribute.NewSet(AttrResult.String("miss")))
	c.stale = metric.WithAttributeSet(attribute.NewSet(AttrResult.String("stale")))
	entries, bytes := opts.MaxEntries, opts.MaxBytes
	if entries <= 0 {
		entries = defaultMaxEntries
	}
	if bytes <= 0 {
		bytes = defaultMaxBytes
	}
	c.maxSize = int(bytes / 16)
	if c.store == nil {
		c.store = newMemory(entries, bytes, c.now, func(n int) { evictions.Add(context.Background(), int64(n)) })
	}
	return c, nil
}

// Middleware returns the receiving middleware that serves the calls of
// tools with a Cache from the cache; put it in server.Options.Middleware.
func (c *Cache) Middleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method != "tools/call" {
				return next(ctx, method, req)
			}
			tc := tool.CallFromContext(ctx)
			cr, ok := req.(*mcp.CallToolRequest)
			if tc == nil || tc.Cache == nil || !ok || cr.Params == nil || cr.Params.Name != tc.Tool ||
				len(cr.Params.InputResponses) > 0 || cr.Params.RequestState != "" {
				return next(ctx, method, req)
			}
			caller, ok := authz.CallerFromContext(ctx)
			if !ok || caller.Subject == "" {
				return next(ctx, method, req)
			}
			version := ""
			if pv, ok := req.(interface{ ProtocolVersion() string }); ok {
				version = pv.ProtocolVersion()
			}
			scope := ""
			if c.scope != nil {
				scope = c.scope(ctx)
			}
			key, ok := Key(scope, caller, version, tc.Tool, cr.Params.Arguments)
			if !ok {
				return next(ctx, method, req)
			}
			return c.serve(ctx, tc.Cache, key, method, req, next)
		}
	}
}

// An entry is stored as the end of its freshness and of its staleness
// (Unix nanoseconds, big-endian), then the result's JSON.
const headerLen = 16

func (c *Cache) serve(ctx context.Context, rc *tool.ResultCache, key, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	now := c.now()
	var stale []byte // an expired result that may answer if the upstream is down
	v, found, err := c.store.Get(ctx, key)
	if err != nil {
		c.log.WarnContext(ctx, "resultcache: lookup failed; the call runs", slog.String("error", err.Error()))
	}
	if found && len(v) > headerLen {
		fresh := time.Unix(0, int64(binary.BigEndian.Uint64(v)))
		staleUntil := time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
		switch {
		case now.Before(fresh):
			if res, err := decode(v[headerLen:]); err == nil {
				c.lookups.Add(ctx, 1, c.hit)
				return res, nil
			}
		case rc.StaleOnError > 0 && now.Before(staleUntil):
			stale = v[headerLen:]
		}
	}
	res, err := next(ctx, method, req)
	r, _ := res.(*mcp.CallToolResult)
	if err != nil || r == nil || r.IsError || r.NeedsInput() || len(r.InputRequests) > 0 || r.RequestState != "" {
		if stale != nil && ctx.Err() == nil && downstreamDown(r, err) {
			if sres, derr := decode(stale); derr == nil {
				c.lookups.Add(ctx, 1, c.stale)
				c.log.InfoContext(ctx, "resultcache: the upstream is down: an expired result answers", slog.String("tool", tool.CallFromContext(ctx).Tool))
				return sres, nil
			}
		}
		c.lookups.Add(ctx, 1, c.miss)
		return res, err
	}
	c.lookups.Add(ctx, 1, c.miss)
	data, merr := json.Marshal(r)
	if merr != nil || len(data) > c.maxSize {
		return res, err
	}
	fresh := now.Add(rc.TTL)
	keep := rc.TTL + rc.StaleOnError
	entry := make([]byte, headerLen, headerLen+len(data))
	binary.BigEndian.PutUint64(entry, uint64(fresh.UnixNano()))
	binary.BigEndian.PutUint64(entry[8:], uint64(now.Add(keep).UnixNano()))
	entry = append(entry, data...)
	if serr := c.store.Set(ctx, key, entry, keep); serr != nil {
		c.log.WarnContext(ctx, "resultcache: storing a result failed", slog.String("error", serr.Error()))
	}
	return res, err
}

// downstreamDown reports whether a call that ended with r and err failed
// because its upstream is down.
func downstreamDown(r *mcp.CallToolResult, err error) bool {
	if err == nil {
		if r == nil || !r.IsError {
			return false
		}
		err = r.GetError()
	}
	if err == nil {
		return false
	}
	var denied *authz.DeniedError
	var outage *authz.OutageError
	var unauth *authz.UnauthenticatedError
	if errors.As(err, &denied) || errors.As(err, &outage) || errors.As(err, &unauth) {
		return false
	}
	var ne net.Error
	return upstream.Unavailable(err) || errors.As(err, &ne)
}

func decode(data []byte) (*mcp.CallToolResult, error) {
	res := new(mcp.CallToolResult)
	if err := json.Unmarshal(data, res); err != nil {
		return nil, err
	}
	return res, nil
}

// Key returns the cache key of a call of the tool named name by caller,
// speaking MCP version, with the JSON arguments args, under scope (see
// [Options.Scope]; "" for none): SHA-256, in hex, over the scope, the
// caller's subject, sorted roles, client and sorted scopes, the
// protocol version (a result's form differs between versions), the
// tool's name and the canonical form of args, each field
// length-prefixed. ok is false
// when args has no one canonical form (it is not JSON, or an object in
// it repeats a key): such a call is not cached.
func Key(scope string, caller authz.Caller, version, name string, args json.RawMessage) (key string, ok bool) {
	canon, ok := canonical(args)
	if !ok {
		return "", false
	}
	h := sha256.New()
	field := func(s string) {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	list := func(l []string) {
		l = slices.Sorted(slices.Values(l))
		field(fmt.Sprint(len(l)))
		for _, s := range l {
			field(s)
		}
	}
	field("toolroute resultcache v2")
	field(scope)
	field(caller.Subject)
	list(caller.Roles)
	field(caller.Client)
	list(caller.Scopes)
	field(version)
	field(name)
	field(string(canon))
	return hex.EncodeToString(h.Sum(nil)), true
}

// canonical returns args in one canonical form: an absent or null value
// as {}, objects with sorted keys, strings re-encoded, numbers as
// written, no spaces. ok is false for invalid JSON or a repeated key.
func canonical(args json.RawMessage) ([]byte, bool) {
	if len(bytes.TrimSpace(args)) == 0 || string(bytes.TrimSpace(args)) == "null" {
		return []byte("{}"), true
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	dec.UseNumber()
	var buf bytes.Buffer
	if !canonValue(dec, &buf, 0) {
		return nil, false
	}
	if _, err := dec.Token(); err == nil {
		return nil, false // data after the value
	}
	return buf.Bytes(), true
}

// maxDepth bounds the nesting canonical follows.
const maxDepth = 1000

func canonValue(dec *json.Decoder, buf *bytes.Buffer, depth int) bool {
	if depth > maxDepth {
		return false
	}
	t, err := dec.Token()
	if err != nil {
		return false
	}
	switch t := t.(type) {
	case json.Delim:
		switch t {
		case '{':
			members := map[string][]byte{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return false
				}
				k, _ := kt.(string)
				if _, dup := members[k]; dup {
					return false
				}
				var v bytes.Buffer
				if !canonValue(dec, &v, depth+1) {
					return false
				}
				members[k] = v.Bytes()
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
			buf.WriteByte('{')
			for i, k := range slices.Sorted(maps.Keys(members)) {
				if i > 0 {
					buf.WriteByte(',')
				}
				kj, _ := json.Marshal(k)
				buf.Write(kj)
				buf.WriteByte(':')
				buf.Write(members[k])
			}
			buf.WriteByte('}')
		case '[':
			buf.WriteByte('[')
			for i := 0; dec.More(); i++ {
				if i > 0 {
					buf.WriteByte(',')
				}
				if !canonValue(dec, buf, depth+1) {
					return false
				}
			}
			if _, err := dec.Token(); err != nil {
				return false
			}
			buf.WriteByte(']')
		default:
			return false
		}
	case string:
		s, _ := json.Marshal(t)
		buf.Write(s)
	case json.Number:
		buf.WriteString(t.String())
	case bool:
		if t {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case nil:
		buf.WriteString("null")
	default:
		return false
	}
	return true
}
