package ratelimit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/toolroute/toolroute/authz"
)

// CodeRateLimited is the JSON-RPC error code of a call over its caller's
// limit. It lies in -32000 to -32019, the part of JSON-RPC's
// implementation-defined range that the MCP specification leaves to
// implementations (it reserves -32020 to -32099 for itself).
const CodeRateLimited = -32010

// Limit is how often one caller may call: Rate calls per Period on
// average, and bursts of up to Burst calls at once.
type Limit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// PerSecond returns the limit of n calls a second, in bursts of up to n.
func PerSecond(n int) Limit { return Limit{Rate: n, Period: time.Second, Burst: n} }

// Check reports whether l is usable: Rate, Period and Burst positive.
func (l Limit) Check() error {
	if l.Rate <= 0 || l.Period <= 0 || l.Burst <= 0 {
		return fmt.Errorf("ratelimit: limit %d per %v, burst %d: rate, period and burst must be positive", l.Rate, l.Period, l.Burst)
	}
	return nil
}

// String describes l: "10 calls per 1s, bursts of 10".
func (l Limit) String() string {
	return fmt.Sprintf("%d calls per %v, bursts of %d", l.Rate, l.Period, l.Burst)
}

// interval is the time one call's token takes to come back.
func (l Limit) interval() time.Duration { return l.Period / time.Duration(l.Rate) }

// Result is a Limiter's decision on one call.
type Result struct {
	// Allowed reports whether the call may proceed (it used a token).
	Allowed bool
	// RetryAfter is, when the call is refused, how long until one would
	// be allowed.
	RetryAfter time.Duration
}

// A Limiter decides whether the caller named key may make one more call
// now, and counts it if so. Its methods must be safe for concurrent use.
// An error refuses the call: see [Middleware].
type Limiter interface {
	Allow(ctx context.Context, key string) (Result, error)
}

// NewLimiter returns an in-process Limiter enforcing l for each key (a
// golang.org/x/time/rate token bucket per key). A key idle long enough
// for its bucket to fill up again is forgotten, so memory stays bounded
// by the callers active within that time. It panics if l is not valid
// (see [Limit.Check]).
func NewLimiter(l Limit) Limiter {
	if err := l.Check(); err != nil {
		panic(err.Error())
	}
	full := l.interval() * time.Duration(l.Burst)
	return &memory{
		limit:   rate.Every(l.interval()),
		burst:   l.Burst,
		full:    full,
		buckets: map[string]*bucket{},
		now:     time.Now,
	}
}

type memory struct {
	limit rate.Limit
	burst int
	full  time.Duration // an idle bucket is full again after this long
	now   func() time.Time

	mu        sync.Mutex
	buckets   map[string]*bucket
	lastSweep time.Time
}

type bucket struct {
	lim  *rate.Limiter
	last time.Time
}

func (m *memory) Allow(_ context.Context, key string) (Result, error) {
	now := m.now()
	m.mu.Lock()
	if now.Sub(m.lastSweep) >= m.full {
		for k, b := range m.buckets {
			if now.Sub(b.last) >= m.full {
				delete(m.buckets, k)
			}
		}
		m.lastSweep = now
	}
	b := m.buckets[key]
	if b == nil {
		b = &bucket{lim: rate.NewLimiter(m.limit, m.burst)}
		m.buckets[key] = b
	}
	b.last = now
	m.mu.Unlock()

	r := b.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Result{RetryAfter: d}, nil
	}
	return Result{Allowed: true}, nil
}

// Options configures [Middleware]. A nil *Options selects the defaults.
type Options struct {
	// Key names the caller whose limit a call counts against. nil selects
	// [CallerKey].
	Key func(ctx context.Context, req *mcp.CallToolRequest) string
	// Logger receives limiter failures. nil selects [slog.Default].
	Logger *slog.Logger
}

// CallerKey is the default key of [Options]: the authz caller's subject
// ("subject:alice"); for a caller without a subject, a digest of its
// bearer token (never the token itself); for a call without a caller,
// "anonymous" (one limit shared by all such calls).
func CallerKey(ctx context.Context, _ *mcp.CallToolRequest) string {
	c, _ := authz.CallerFromContext(ctx)
	switch {
	case c.Subject != "":
		return "subject:" + c.Subject
	case c.Bearer != "":
		d := sha256.Sum256([]byte(c.Bearer))
		return "bearer:" + hex.EncodeToString(d[:16])
	}
	return "anonymous"
}

// Middleware returns receiving middleware that counts every tools/call
// against its caller's limit in l, before the tool runs. A call over the
// limit gets a JSON-RPC error (code [CodeRateLimited]) whose message says
// when to retry and whose data is {"retryAfterMs": N}. A call that l
// cannot decide (it returns an error) is refused with an internal error
// (-32603), the cause logged: a Limiter that should let calls through
// when its store is down must do so itself (redisstore's falls back to an
// in-process limit). It panics if l is nil.
//
// Give it to server.Options.Middleware: it then runs after the caller is
// resolved and the call authorized, so that only visible tools' calls
// count, each against its own caller.
func Middleware(l Limiter, opts Options) mcp.Middleware {
	if l == nil {
		panic("ratelimit: Middleware: nil Limiter")
	}
	key, logger := opts.Key, opts.Logger
	if key == nil {
		key = CallerKey
	}
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			cr, ok := req.(*mcp.CallToolRequest)
			if method != "tools/call" || !ok {
				return next(ctx, method, req)
			}
			res, err := l.Allow(ctx, key(ctx, cr))
			if err != nil {
				lg := logger
				if lg == nil {
					lg = slog.Default()
				}
				lg.ErrorContext(ctx, "ratelimit: the limiter failed; call refused", slog.Any("error", err))
				return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "ratelimit: cannot check the rate limit now; try again later"}
			}
			if !res.Allowed {
				return nil, Exceeded(res.RetryAfter)
			}
			return next(ctx, method, req)
		}
	}
}

// Exceeded returns the JSON-RPC error of a call over its limit, to be
// retried after retryAfter (rounded up to the millisecond).
func Exceeded(retryAfter time.Duration) *jsonrpc.Error {
	ms := int64(math.Ceil(float64(retryAfter) / float64(time.Millisecond)))
	data, _ := json.Marshal(map[string]int64{"retryAfterMs": ms})
	return &jsonrpc.Error{
		Code:    CodeRateLimited,
		Message: fmt.Sprintf("rate limit exceeded: too many calls from this caller; retry after %dms", ms),
		Data:    data,
	}
}
