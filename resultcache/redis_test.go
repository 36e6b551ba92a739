package resultcache_test

import (
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/authz"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/resultcache"
	"github.com/toolroute/toolroute/server/servertest"
)

// TestRedisAcrossReplicas, on a real redis-server: two replicas sharing
// it answer a caller's repeated call from the result the other stored,
// and still never give one caller's result to another.
func TestRedisAcrossReplicas(t *testing.T) {
	srv := redistest.Start(t)
	d := &deps{} // one counter of runs for both replicas
	var replicas [2]*resultcache.Cache
	for i := range replicas {
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
		t.Cleanup(func() { rdb.Close() })
		c, err := resultcache.New(resultcache.Options{Store: redisstore.NewResultStore(rdb, redisstore.Options{Prefix: "svc:"})})
		if err != nil {
			t.Fatal(err)
		}
		replicas[i] = c
	}
	a, b := serveCached(t, replicas[0], d), serveCached(t, replicas[1], d)
	alice := &authz.Caller{Subject: "alice", Roles: []string{"viewer"}}
	bob := &authz.Caller{Subject: "bob", Roles: []string{"viewer"}}
	args := map[string]any{"b": "x"}
	for i, s := range []struct {
		srv    *mcp.Server
		caller *authz.Caller
		want   string
	}{
		{a, alice, `{"b":"x","run":1,"subject":"alice"}`},
		{b, alice, `{"b":"x","run":1,"subject":"alice"}`},
		{b, bob, `{"b":"x","run":2,"subject":"bob"}`},
		{a, bob, `{"b":"x","run":2,"subject":"bob"}`},
	} {
		cs := servertest.Connect(t, s.srv, s.caller, servertest.Options{})
		if got := callText(t, cs, "whoami", args); got != s.want {
			t.Errorf("step %d: %s, want %s", i, got, s.want)
		}
	}
	if n := d.runs.Load(); n != 2 {
		t.Errorf("%d runs, want 2", n)
	}
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rdb.Close()
	keys, err := rdb.Keys(t.Context(), "svc:result:*").Result()
	if err != nil || len(keys) != 2 {
		t.Errorf("Redis holds %v (%v), want two results", keys, err)
	}
}
