package redisstore_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/authz/oauth"
	"github.com/toolroute/toolroute/authz/permission"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/internal/testing/syncbuf"
	"github.com/toolroute/toolroute/ratelimit"
	"github.com/toolroute/toolroute/redisstore"
)

// client returns a client of srv with short timeouts and no retries, so
// that an outage shows at once.
func client(t testing.TB, srv *redistest.Server) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr: srv.Addr, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

func TestNonceStore(t *testing.T) {
	srv := redistest.Start(t)
	rdb := client(t, srv)
	ctx := context.Background()
	a := redisstore.NewNonceStore(rdb, redisstore.Options{Prefix: "svc:"})
	b := redisstore.NewNonceStore(client(t, srv), redisstore.Options{Prefix: "svc:"})
	expiry := time.Now().Add(5 * time.Minute)
	if err := a.Spend(ctx, "00ff", expiry); err != nil {
		t.Fatal(err)
	}
	for _, s := range []*redisstore.NonceStore{a, b} {
		if err := s.Spend(ctx, "00ff", expiry); !errors.Is(err, permission.ErrReplayed) {
			t.Errorf("second spend = %v, want ErrReplayed", err)
		}
	}
	// Kept until the expiry plus the clock margin, by Redis's clock.
	ttl := rdb.PTTL(ctx, "svc:nonce:00ff").Val()
	if want := time.Until(expiry) + redisstore.NonceMargin; ttl < want-time.Second || ttl > want+10*time.Millisecond { // Redis counts whole ms
		t.Errorf("PTTL = %v, want about %v", ttl, want)
	}
	// Another prefix is another guard.
	other := redisstore.NewNonceStore(rdb, redisstore.Options{Prefix: "other:"})
	if err := other.Spend(ctx, "00ff", expiry); err != nil {
		t.Errorf("spend under another prefix: %v", err)
	}

	srv.Stop()
	err := a.Spend(ctx, "0100", expiry)
	if err == nil || errors.Is(err, permission.ErrReplayed) {
		t.Errorf("spend while Redis is down = %v, want an outage error", err)
	}
	srv.Restart()
	if err := a.Spend(ctx, "0100", expiry); err != nil {
		t.Errorf("spend after Redis restarted: %v", err)
	}
}

func TestAnswerStore(t *testing.T) {
	srv := redistest.Start(t)
	rdb := client(t, srv)
	ctx := context.Background()
	s := redisstore.NewAnswerStore(rdb, redisstore.Options{AnswerTTL: time.Hour})
	err := s.Remember(ctx, []permission.Answer{
		{Principal: "alice", Tool: "delete_item", Subject: "item:1", Capability: "delete", Effect: authz.Allow},
		{Principal: "alice", Tool: "delete_item", Subject: "item:1", Capability: "purge", Effect: authz.Deny},
		{Principal: "alice", Tool: "delete_item", Subject: "item:2", Capability: "delete", Effect: authz.Deny},
		// Fields that would run together if the key were a plain join.
		{Principal: "alice:delete_item", Tool: "", Subject: "item:1", Capability: "delete", Effect: authz.Deny},
	})
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Recall(ctx, "alice", "delete_item", []string{"item:1", "item:2", "item:3"})
	if err != nil {
		t.Fatal(err)
	}
	want := []map[string]authz.Effect{
		{"delete": authz.Allow, "purge": authz.Deny},
		{"delete": authz.Deny},
		nil,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Recall (-want +got):\n%s", diff)
	}
	// A later answer replaces an earlier one; a fresh store (another
	// replica) sees it.
	s.Remember(ctx, []permission.Answer{{Principal: "alice", Tool: "delete_item", Subject: "item:2", Capability: "delete", Effect: authz.Allow}})
	got, _ = redisstore.NewAnswerStore(client(t, srv), redisstore.Options{}).Recall(ctx, "alice", "delete_item", []string{"item:2"})
	if diff := cmp.Diff([]map[string]authz.Effect{{"delete": authz.Allow}}, got); diff != "" {
		t.Errorf("replaced answer (-want +got):\n%s", diff)
	}
	keys := rdb.Keys(ctx, "toolroute:answers:*").Val()
	if len(keys) != 3 {
		t.Fatalf("keys = %q, want 3 hashes", keys)
	}
	for _, k := range keys {
		if ttl := rdb.PTTL(ctx, k).Val(); ttl <= 59*time.Minute || ttl > time.Hour {
			t.Errorf("PTTL(%s) = %v, want about an hour", k, ttl)
		}
	}
	if err := s.Remember(ctx, []permission.Answer{{Effect: ""}}); err == nil {
		t.Error("an answer without an effect was stored")
	}
	// Something else in the hash fails closed rather than being guessed.
	for _, k := range keys {
		rdb.HSet(ctx, k, "x", "maybe")
	}
	if _, err := s.Recall(ctx, "alice", "delete_item", []string{"item:1", "item:2"}); err == nil || !strings.Contains(err.Error(), `"maybe"`) {
		t.Errorf("Recall of a corrupt hash = %v", err)
	}

	srv.Stop()
	if _, err := s.Recall(ctx, "alice", "delete_item", []string{"item:1"}); err == nil {
		t.Error("Recall while Redis is down: no error")
	}
	if err := s.Remember(ctx, want0()); err == nil {
		t.Error("Remember while Redis is down: no error")
	}
}

func want0() []permission.Answer {
	return []permission.Answer{{Principal: "p", Tool: "t", Subject: "s", Capability: "c", Effect: authz.Allow}}
}

// TestLimiterShared: two limiters (two replicas) on one Redis share a
// caller's burst; other callers are apart.
func TestLimiterShared(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	limit := ratelimit.Limit{Rate: 5, Period: time.Hour, Burst: 5} // no refill during the test
	replicas := []*redisstore.Limiter{
		redisstore.NewLimiter(client(t, srv), limit, redisstore.Options{}),
		redisstore.NewLimiter(client(t, srv), limit, redisstore.Options{}),
	}
	allowed := 0
	for i := range 10 {
		res, err := replicas[i%2].Allow(ctx, "subject:alice")
		if err != nil {
			t.Fatal(err)
		}
		if res.Allowed {
			allowed++
		} else if res.RetryAfter <= 0 || res.RetryAfter > 12*time.Minute {
			t.Errorf("refused with RetryAfter %v, want up to one interval (12m)", res.RetryAfter)
		}
	}
	if allowed != 5 {
		t.Errorf("allowed %d of 10 calls across two replicas, want the burst, 5", allowed)
	}
	if res, _ := replicas[0].Allow(ctx, "subject:bob"); !res.Allowed {
		t.Error("bob refused: limited by alice's calls")
	}
}

// TestLimiterFallback: while Redis is down each replica limits in
// process (logged once), and the shared limit is back with Redis.
func TestLimiterFallback(t *testing.T) {
	srv := redistest.Start(t)
	ctx := context.Background()
	var log syncbuf.Buffer
	limit := ratelimit.Limit{Rate: 2, Period: time.Hour, Burst: 2}
	l := redisstore.NewLimiter(client(t, srv), limit, redisstore.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	count := func(key string, n int) int {
		allowed := 0
		for range n {
			res, err := l.Allow(ctx, key)
			if err != nil {
				t.Fatal(err)
			}
			if res.Allowed {
				allowed++
			}
		}
		return allowed
	}
	if got := count("alice", 1); got != 1 {
		t.Fatalf("first call refused")
	}
	srv.Stop()
	if got := count("alice", 5); got != 2 {
		t.Errorf("Redis down: allowed %d of 5, want the in-process burst, 2", got)
	}
	if n := strings.Count(log.String(), "enforced per process"); n != 1 {
		t.Errorf("fallback logged %d times, want once:\n%s", n, &log)
	}
	srv.Restart() // empty: alice's shared bucket starts full again
	if got := count("alice", 5); got != 2 {
		t.Errorf("Redis back: allowed %d of 5, want 2", got)
	}
	if !strings.Contains(log.String(), "shared again") {
		t.Errorf("recovery not logged:\n%s", &log)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	srv.Stop()
	if _, err := l.Allow(cancelled, "alice"); !errors.Is(err, context.Canceled) {
		t.Errorf("Allow with an ended context = %v, want context.Canceled", err)
	}
}

func TestConstructorsPanic(t *testing.T) {
	for name, f := range map[string]func(){
		"NewNonceStore":  func() { redisstore.NewNonceStore(nil, redisstore.Options{}) },
		"NewAnswerStore": func() { redisstore.NewAnswerStore(nil, redisstore.Options{}) },
		"NewLimiter":     func() { redisstore.NewLimiter(nil, ratelimit.PerSecond(1), redisstore.Options{}) },
		"NewLimiter bad": func() {
			redisstore.NewLimiter(redis.NewClient(&redis.Options{}), ratelimit.Limit{}, redisstore.Options{})
		},
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.HasPrefix(r.(string), "redisstore: ") {
					t.Errorf("%s: panic %v", name, r)
				}
			}()
			f()
		}()
	}
}

// BenchmarkSpend measures one replay-guard spend (SET NX PXAT) on a
// local Redis, and reports its 99th percentile in µs.
func BenchmarkSpend(b *testing.B) {
	srv := redistest.Start(b)
	s := redisstore.NewNonceStore(client(b, srv), redisstore.Options{})
	ctx := context.Background()
	expiry := time.Now().Add(time.Minute)
	var lat []time.Duration
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		if err := s.Spend(ctx, strconv.Itoa(i), expiry); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// The replay cache is shared by every client of one Redis and prefix,
// keeps a proof until its window ends plus the clock margin, and fails
// (never admits) while Redis is down.
func TestReplayCache(t *testing.T) {
	srv := redistest.Start(t)
	rdb := client(t, srv)
	ctx := context.Background()
	var _ oauth.ReplayCache = (*redisstore.ReplayCache)(nil)
	a := redisstore.NewReplayCache(rdb, redisstore.Options{Prefix: "svc:"})
	b := redisstore.NewReplayCache(client(t, srv), redisstore.Options{Prefix: "svc:"})
	until := time.Now().Add(5 * time.Minute)
	if first, err := a.Use(ctx, "p1", until); !first || err != nil {
		t.Fatalf("first use = %v, %v", first, err)
	}
	for _, c := range []*redisstore.ReplayCache{a, b} {
		if first, err := c.Use(ctx, "p1", until); first || err != nil {
			t.Errorf("second use = %v, %v; want false, nil", first, err)
		}
	}
	ttl := rdb.PTTL(ctx, "svc:dpop:p1").Val()
	if want := time.Until(until) + redisstore.NonceMargin; ttl < want-time.Second || ttl > want+10*time.Millisecond {
		t.Errorf("PTTL = %v, want about %v", ttl, want)
	}
	if first, err := redisstore.NewReplayCache(rdb, redisstore.Options{Prefix: "other:"}).Use(ctx, "p1", until); !first || err != nil {
		t.Errorf("use under another prefix = %v, %v", first, err)
	}
	srv.Stop()
	if first, err := a.Use(ctx, "p2", until); first || err == nil {
		t.Errorf("use while Redis is down = %v, %v; want false and an error", first, err)
	}
	srv.Restart()
	if first, err := a.Use(ctx, "p2", until); !first || err != nil {
		t.Errorf("use after Redis restarted = %v, %v", first, err)
	}
}
