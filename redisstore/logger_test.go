package redisstore_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/redisstore"
)

// stderrLogger is go-redis's own default, restored after a test that
// replaced the process's go-redis logger.
type stderrLogger struct{ *log.Logger }

func (l stderrLogger) Printf(_ context.Context, format string, v ...any) {
	l.Logger.Printf(format, v...)
}

func restoreGoRedisLogger(t *testing.T) {
	t.Cleanup(func() { redis.SetLogger(stderrLogger{log.New(os.Stderr, "redis: ", log.LstdFlags|log.Lshortfile)}) })
}

// record is one JSON log record of a test's logger.
type record struct {
	Level      string `json:"level"`
	Msg        string `json:"msg"`
	Line       string `json:"line"`
	Addr       string `json:"addr"`
	Suppressed int    `json:"suppressed"`
}

func records(t *testing.T, buf *syncbuf.Buffer) []record {
	t.Helper()
	var out []record
	for line := range strings.Lines(buf.String()) {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// count returns how many records have the message msg.
func count(recs []record, msg string) int {
	n := 0
	for _, r := range recs {
		if r.Msg == msg {
			n++
		}
	}
	return n
}

// TestLoggerOutage: with go-redis's logger set by SetLogger, N calls
// while Redis is down log go-redis's dial failure once (not N times),
// and the limiter's switch to its in-process limit once; the first
// success once Redis is back logs "reachable again" once (with the
// number of lines not logged), and the limiter's return once. A second
// outage is a new state: its failure is logged again, once.
func TestLoggerOutage(t *testing.T) {
	restoreGoRedisLogger(t)
	srv := redistest.Start(t)
	var buf syncbuf.Buffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// One dial attempt per command, no retries: each call dials once.
	rdb := redis.NewClient(&redis.Options{
		Addr: srv.Addr, DialTimeout: 200 * time.Millisecond, DialerRetries: 1,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1,
	})
	t.Cleanup(func() { rdb.Close() })
	redisstore.SetLogger(logger, rdb)
	stores := redisstore.Options{Logger: logger}
	lim := redisstore.NewLimiter(rdb, ratelimit.Limit{Rate: 1000, Period: time.Second, Burst: 1000}, stores)
	nonces := redisstore.NewNonceStore(rdb, stores)
	ctx := context.Background()
	expiry := time.Now().Add(time.Minute)
	calls := 0
	// call makes one nonce spend and then one limiter decision, and
	// reports whether the spend reached Redis. The spend comes first: once
	// it has reached Redis, the decision after it does too, so the call
	// that ends an outage logs the limiter's return. (The other way round,
	// go-redis's background probe may succeed between a decision that
	// failed and the spend, and the limiter returns only at the next call.)
	call := func() bool {
		calls++
		spent := nonces.Spend(ctx, fmt.Sprint("n", calls), expiry) == nil
		if _, err := lim.Allow(ctx, "subject:alice"); err != nil {
			t.Fatalf("Allow: %v", err)
		}
		return spent
	}
	if !call() {
		t.Fatal("a call failed while Redis is up")
	}
	if s := buf.String(); s != "" {
		t.Fatalf("logged while Redis is up:\n%s", s)
	}

	// go-redis logs each failed dial until as many failed as its pool
	// has connections (10 per CPU), then dials no more until a probe
	// succeeds: each call dials twice.
	const n = 30
	outage := func(which string) {
		t.Helper()
		srv.Stop()
		for range n {
			if call() {
				t.Fatalf("%s outage: a spend reached a stopped Redis", which)
			}
		}
	}
	// back restarts Redis and calls until a spend reaches it (go-redis
	// probes a pool that failed every dial once a second).
	back := func(which string) {
		t.Helper()
		srv.Restart()
		for i := 0; !call(); i++ {
			if i == 1000 {
				t.Fatalf("%s recovery: no spend reached Redis in 1000 calls", which)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}

	outage("first")
	recs := records(t, &buf)
	if got := count(recs, "redisstore: go-redis"); got != 1 {
		t.Errorf("first outage, %d calls: %d go-redis records, want 1:\n%s", n, got, &buf)
	}
	if got := len(recs); got != 2 {
		t.Errorf("first outage, %d calls: %d records, want 2 (go-redis's failure, the limiter's switch):\n%s", n, got, &buf)
	}
	for _, r := range recs {
		if r.Msg == "redisstore: go-redis" && (r.Level != "WARN" || !strings.Contains(r.Line, "failed to dial") || !strings.Contains(r.Line, srv.Addr)) {
			t.Errorf("go-redis's failure: %+v, want a WARN record whose line tells of the dial to %s", r, srv.Addr)
		}
	}

	back("first")
	recs = records(t, &buf)
	if got := count(recs, "redisstore: Redis is reachable again"); got != 1 {
		t.Errorf("after the first recovery: %d recovery records, want 1:\n%s", got, &buf)
	}
	for _, r := range recs {
		if r.Msg == "redisstore: Redis is reachable again" && (r.Level != "INFO" || r.Suppressed == 0 || r.Addr != srv.Addr) {
			t.Errorf("the recovery record: %+v, want INFO, addr %s, some lines suppressed", r, srv.Addr)
		}
	}
	if got := len(recs); got != 4 {
		t.Errorf("after the first recovery: %d records, want 4 (and the limiter's return):\n%s", got, &buf)
	}
	for range n {
		call()
	}
	if got := len(records(t, &buf)); got != 4 {
		t.Errorf("%d calls after the recovery logged %d records:\n%s", n, got-4, &buf)
	}

	outage("second")
	if got := count(records(t, &buf), "redisstore: go-redis"); got != 2 {
		t.Errorf("second outage: %d go-redis records in all, want 2 (one an outage):\n%s", got, &buf)
	}
	back("second")
	if got := count(records(t, &buf), "redisstore: Redis is reachable again"); got != 2 {
		t.Errorf("after the second recovery: %d recovery records in all, want 2:\n%s", got, &buf)
	}
}

// TestLoggerLines: a Logger's records name the line at a level of its
// kind, without a URL's password or a bearer token; the distinct lines
// it remembers between two successes are bounded, and past the bound
// one record says so.
func TestLoggerLines(t *testing.T) {
	var buf syncbuf.Buffer
	l := redisstore.NewLogger(slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})))
	ctx := authz.WithCaller(context.Background(), authz.Caller{Subject: "alice", Bearer: "caller-s3cret"})
	l.Printf(ctx, "sentinel: GetMasterAddrByName addr=%s, master=%q failed: %s", "redis://default:pa55word@10.0.0.1:26379/0", "mymaster",
		errors.New("dial rediss://:hunter2@10.0.0.1:26379: echoed caller-s3cret and Authorization: Bearer other-s3cret"))
	l.Printf(ctx, "autopipeline: recovered dispatch panic: %v\n%s", "boom", "stack")
	l.Printf(ctx, "sentinel: new master=%q addr=%q", "mymaster", "redis://10.0.0.2:6379")
	recs := records(t, &buf)
	if len(recs) != 3 {
		t.Fatalf("%d records, want 3:\n%s", len(recs), &buf)
	}
	for _, s := range []string{"pa55word", "hunter2", "caller-s3cret", "other-s3cret"} {
		if strings.Contains(buf.String(), s) {
			t.Errorf("the log shows %q:\n%s", s, &buf)
		}
	}
	if want := "redis://default:xxxxx@10.0.0.1:26379/0"; !strings.Contains(recs[0].Line, want) || !strings.Contains(recs[0].Line, "rediss://:xxxxx@10.0.0.1:26379") {
		t.Errorf("line %q: want the URLs without their passwords (%s)", recs[0].Line, want)
	}
	for i, want := range []string{"WARN", "ERROR", "INFO"} {
		if recs[i].Level != want || recs[i].Msg != "redisstore: go-redis" {
			t.Errorf("record %d: %+v, want %s redisstore: go-redis", i, recs[i], want)
		}
	}

	// Distinct failures, more than a Logger remembers: each of the first
	// ones once, then one record for the rest, and no more.
	var many syncbuf.Buffer
	l = redisstore.NewLogger(slog.New(slog.NewJSONHandler(&many, nil)))
	for round := range 3 {
		for i := range 200 {
			l.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %v", round+1, fmt.Errorf("dial tcp 10.0.%d.%d:6379: refused", i/256, i%256))
		}
	}
	recs = records(t, &many)
	if got, tooMany := count(recs, "redisstore: go-redis"), count(recs, "redisstore: go-redis logs too many distinct lines; the rest are not logged until Redis is reachable again"); got != 64 || tooMany != 1 {
		t.Errorf("600 lines, 200 distinct: %d go-redis records and %d saying there are too many, want 64 and 1", got, tooMany)
	}
}
