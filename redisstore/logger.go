package redisstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/server"
)

// maxLoggerLines bounds the distinct lines a [Logger] remembers between
// two successes: past it, the rest are counted, not logged. Each is
// remembered by at most maxLineKey bytes of its key.
const (
	maxLoggerLines = 64
	maxLineKey     = 1 << 10
)

// The messages of a [Logger]'s records: the go-redis line itself is an
// attribute ("line"), so that the message stays the same.
const (
	msgGoRedis   = "redisstore: go-redis"
	msgReachable = "redisstore: Redis is reachable again"
	msgTooMany   = "redisstore: go-redis logs too many distinct lines; the rest are not logged until Redis is reachable again"
)

// Logger writes go-redis's own log lines, which go-redis prints to
// standard error through one logger per process (redis.SetLogger), to a
// *slog.Logger, once per state change rather than once per call: while
// Redis cannot be reached every command that dials logs the same
// failure, and a service making a hundred calls a second would log a
// hundred lines a second.
//
// Each line becomes a record with the message "redisstore: go-redis" and
// the line as its attribute "line" (a URL's password replaced by
// "xxxxx"), at level ERROR if it tells of a panic, WARN if of a failure
// (it mentions "fail", "error", "unexpected", "unknown", "rejected",
// "removing" or "not found"), INFO otherwise, through
// server.RedactingHandler. A line logged once is not logged again, nor
// counted apart, until Redis is reachable again: the same format with
// the same errors among its arguments is the same line (a connection
// number or an attempt count does not make a new one). The first
// success after a failure was logged — a dial, or a command Redis
// answered, even with an error reply — logs "redisstore: Redis is
// reachable again" (INFO) with the address dialled, if known, and the
// number of lines not logged meanwhile ("suppressed"), and lines are
// logged again. At most 64 distinct lines are remembered between two
// successes; past them, one record says so and the rest are only
// counted.
//
// go-redis tells a Logger nothing of its successes: the Logger learns
// them as a hook (redis.Hook) of each client, which costs one atomic
// load per command while nothing failed. Give it to every client with
// AddHook, or use [SetLogger], which does both; a client without it
// never ends a failure, and its repeated failures stay unlogged. (A
// redis.ClusterClient's hooks see its commands, not its nodes' dials:
// add the Logger to the nodes too, with OnNewNode.) The state is the
// process's, as go-redis's logger is: with clients of several Redis
// servers, a success of one ends the held-back lines of all.
//
// A Logger must be created with [NewLogger]. Its methods are safe for
// concurrent use.
type Logger struct {
	log *slog.Logger

	// dirty is set when a line was logged or suppressed since the last
	// success: only then does a success take the lock.
	dirty atomic.Bool

	mu         sync.Mutex
	seen       map[string]struct{} // the lines logged since the last success
	failed     bool                // a WARN or ERROR line among them
	suppressed int                 // lines not logged since the last success
	tooMany    bool                // the record saying so was logged
}

// NewLogger returns a Logger writing to logger; nil selects
// [slog.Default].
func NewLogger(logger *slog.Logger) *Logger {
	if logger == nil {
		logger = slog.Default()
	}
	return &Logger{log: slog.New(server.RedactingHandler(logger.Handler())), seen: map[string]struct{}{}}
}

// SetLogger routes go-redis's log lines to logger, as a [Logger] (nil
// selects [slog.Default]), for the whole process (redis.SetLogger), and
// adds it as a hook to each of clients, so that it learns when Redis is
// reachable again. Call it once, before the clients are used; it
// returns the Logger for clients made later (AddHook it to them).
func SetLogger(logger *slog.Logger, clients ...redis.UniversalClient) *Logger {
	l := NewLogger(logger)
	redis.SetLogger(l)
	for _, c := range clients {
		c.AddHook(l)
	}
	return l
}

// Printf logs one go-redis line: the method redis.SetLogger needs.
func (l *Logger) Printf(ctx context.Context, format string, v ...any) {
	if ctx == nil {
		ctx = context.Background()
	}
	level := lineLevel(format)
	key := lineKey(format, v)
	l.mu.Lock()
	l.dirty.Store(true)
	if _, ok := l.seen[key]; ok {
		l.suppressed++
		l.mu.Unlock()
		return
	}
	if len(l.seen) >= maxLoggerLines {
		l.suppressed++
		first := !l.tooMany
		l.tooMany = true
		l.mu.Unlock()
		if first {
			l.log.WarnContext(ctx, msgTooMany, slog.Int("distinct", maxLoggerLines))
		}
		return
	}
	l.seen[key] = struct{}{}
	if level >= slog.LevelWarn {
		l.failed = true
	}
	l.mu.Unlock()
	l.log.Log(ctx, level, msgGoRedis, slog.String("line", redactURLs(fmt.Sprintf(format, v...))))
}

// reachable notes a success: Redis answered (at addr, if known).
func (l *Logger) reachable(ctx context.Context, addr string) {
	if !l.dirty.Load() {
		return
	}
	l.mu.Lock()
	if !l.dirty.Swap(false) {
		l.mu.Unlock()
		return
	}
	failed, n := l.failed, l.suppressed
	clear(l.seen)
	l.failed, l.suppressed, l.tooMany = false, 0, false
	l.mu.Unlock()
	if !failed {
		return
	}
	attrs := []slog.Attr{slog.Int("suppressed", n)}
	if addr != "" {
		attrs = append(attrs, slog.String("addr", addr))
	}
	l.log.LogAttrs(ctx, slog.LevelInfo, msgReachable, attrs...)
}

// DialHook is the Logger's part of redis.Hook: a connection dialled is a
// success.
func (l *Logger) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err == nil {
			l.reachable(ctx, addr)
		}
		return c, err
	}
}

// ProcessHook is the Logger's part of redis.Hook: a command Redis
// answered, even with an error reply, is a success.
func (l *Logger) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if answered(err) {
			l.reachable(ctx, "")
		}
		return err
	}
}

// ProcessPipelineHook is the Logger's part of redis.Hook: a pipeline
// Redis answered, even with error replies, is a success.
func (l *Logger) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if answered(err) {
			l.reachable(ctx, "")
		}
		return err
	}
}

// answered reports whether err, a command's, means Redis answered it: no
// error, a missing key, or an error reply.
func answered(err error) bool {
	var reply redis.Error
	return err == nil || errors.Is(err, redis.Nil) || errors.As(err, &reply)
}

// lineLevel is the level of a go-redis line of format.
func lineLevel(format string) slog.Level {
	f := strings.ToLower(format)
	if strings.Contains(f, "panic") {
		return slog.LevelError
	}
	for _, w := range []string{"fail", "error", "unexpected", "unknown", "rejected", "removing", "not found"} {
		if strings.Contains(f, w) {
			return slog.LevelWarn
		}
	}
	return slog.LevelInfo
}

// lineKey is what makes two go-redis lines the same: their format and
// the texts of the errors among their arguments (not the numbers, which
// count attempts or name connections).
func lineKey(format string, v []any) string {
	var b strings.Builder
	b.WriteString(format)
	for _, a := range v {
		if err, ok := a.(error); ok && err != nil {
			b.WriteByte(0)
			b.WriteString(err.Error())
		}
	}
	if k := b.String(); len(k) > maxLineKey {
		return strings.Clone(k[:maxLineKey])
	}
	return b.String()
}

// redactURLs returns s with the password of every URL in it
// ("scheme://user:password@host") replaced by "xxxxx", as
// url.URL.Redacted does.
func redactURLs(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "://")
		if i < 0 {
			break
		}
		start := i + len("://")
		end := start + strings.IndexFunc(s[start:], func(r rune) bool {
			return r == '/' || r == '?' || r == '#' || r == '"' || r == '\'' || r == ' ' || r == '\t' || r == '\n' || r == '\r'
		})
		if end < start {
			end = len(s)
		}
		authority := s[start:end]
		at := strings.LastIndexByte(authority, '@')
		colon := strings.IndexByte(authority[:max(at, 0)], ':')
		if at < 0 || colon < 0 {
			b.WriteString(s[:end])
			s = s[end:]
			continue
		}
		b.WriteString(s[:start+colon+1])
		b.WriteString("xxxxx")
		b.WriteString(s[start+at : end])
		s = s[end:]
	}
	b.WriteString(s)
	return b.String()
}
