package tasks_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/internal/testing/await"
	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/server/tasks"
)

// replicas starts n replicas sharing one real redis-server, each with a
// client of its own, and a short lease.
func replicas(t *testing.T, n int) ([]*env, []*redis.Client) {
	t.Helper()
	srv := redistest.Start(t)
	var envs []*env
	var clients []*redis.Client
	for range n {
		rdb := redisClient(t, srv.Addr)
		clients = append(clients, rdb)
		envs = append(envs, newEnv(t, tasks.Options{
			Store: redisstore.NewTaskStore(rdb, redisstore.Options{Prefix: "svc:"}),
			Lease: 300 * time.Millisecond,
		}))
	}
	return envs, clients
}

// TestAcrossReplicas: a task created on A is polled on B and cancelled
// on C, whose cancellation reaches A's handler; another created on A is
// answered on B and completes, seen on C.
func TestAcrossReplicas(t *testing.T) {
	r, _ := replicas(t, 3)
	a, b, c := r[0], r[1], r[2]

	id := a.create(ada, "slow")
	await.Recv(t, a.deps.started, "the handler's start on A")
	if got, rerr := b.get(ada, id); rerr != nil || got["status"] != "working" {
		t.Fatalf("tasks/get on B = %v, %+v", got, rerr)
	}
	if _, rerr := b.get(bob, id); rerr == nil {
		t.Error("bob read ada's task on B")
	}
	if _, rerr := c.rpc(ada, "tasks/cancel", map[string]any{"taskId": id}); rerr != nil {
		t.Fatalf("tasks/cancel on C: %+v", rerr)
	}
	await.Recv(t, a.deps.ended, "the end of the handler's context on A")
	b.until(ada, id, "cancelled")

	ask := a.create(ada, "confirm")
	b.until(ada, ask, "input_required")
	if _, rerr := b.rpc(ada, "tasks/update", map[string]any{"taskId": ask, "inputResponses": map[string]any{
		"1.permission": map[string]any{"action": "accept", "content": map[string]any{"decision": "allow once"}},
	}}); rerr != nil {
		t.Fatalf("tasks/update on B: %+v", rerr)
	}
	if s := resultText(c.until(ada, ask, "completed")["result"]); s != `{"text":"deleted"}` {
		t.Errorf("result on C = %q", s)
	}
	if n := a.deps.runs.Load(); n != 2 {
		t.Errorf("the handler ran %d times on A, want 2", n)
	}
	if n := b.deps.runs.Load() + c.deps.runs.Load(); n != 0 {
		t.Errorf("the handler ran %d times on B and C, want none: the work stays where it began", n)
	}
}

// TestReplicaDeath: when the replica running a task can no longer renew
// its lease (here its connection to Redis is gone), the next replica to
// read the task after the lease fails it, with a clear error, and it
// stays failed when the lost replica's handler ends.
func TestReplicaDeath(t *testing.T) {
	r, clients := replicas(t, 2)
	a, b := r[0], r[1]
	id := a.create(ada, "slow")
	await.Recv(t, a.deps.started, "the handler's start on A")
	clients[0].Close()
	got := b.until(ada, id, "failed")
	if m, _ := got["error"].(map[string]any); !strings.Contains(got["statusMessage"].(string), "lease ran out") || m["code"] != float64(-32603) {
		t.Errorf("the dead replica's task = %v", got)
	}
	close(a.deps.release)
	if again, _ := b.get(ada, id); again["status"] != "failed" {
		t.Errorf("the failed task became %v", again["status"])
	}
}

// TestStoreOutage: a replica whose store is unreachable fails closed: a
// TaskAlways call is refused without running, task requests get an
// internal error; what is stored stays, served by a replica that
// reaches the store.
func TestStoreOutage(t *testing.T) {
	r, clients := replicas(t, 2)
	a, b := r[0], r[1]
	close(a.deps.release)
	close(b.deps.release)
	id := a.create(ada, "slow")
	a.until(ada, id, "completed")

	clients[1].Close() // B's store is gone
	_, rerr := b.call(ada, "slow")
	if rerr == nil || rerr.Code != -32603 || !strings.Contains(rerr.Message, "not run") {
		t.Fatalf("a task call on B without its store: %+v", rerr)
	}
	select {
	case <-b.deps.started:
		t.Error("the refused call ran its handler")
	default:
	}
	for _, m := range []string{"tasks/get", "tasks/update", "tasks/cancel"} {
		if _, rerr := b.rpc(ada, m, map[string]any{"taskId": id, "inputResponses": map[string]any{}}); rerr == nil || rerr.Code != -32603 {
			t.Errorf("%s on B without its store: %+v, want -32603", m, rerr)
		}
	}
	if got, _ := a.get(ada, id); got["status"] != "completed" {
		t.Errorf("the completed task on A: %v", got)
	}
	// A TaskAllowed call stays synchronous.
	res, rerr := b.call(ada, "maybe")
	if rerr != nil || res["resultType"] == "task" {
		t.Errorf("a TaskAllowed call on B without its store = %v, %+v; want its synchronous answer", res, rerr)
	}
}

// TestExpiry: a task is gone after its TTL, from Redis and from memory,
// and its id then answers like an unknown one.
func TestExpiry(t *testing.T) {
	srv := redistest.Start(t)
	for name, store := range map[string]tasks.Store{
		"memory": &tasks.Memory{},
		"redis":  redisstore.NewTaskStore(redisClient(t, srv.Addr), redisstore.Options{}),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEnv(t, tasks.Options{Store: store, TTL: 300 * time.Millisecond, RunTimeout: 100 * time.Millisecond})
			id := e.create(ada, "report")
			got := e.until(ada, id, "completed")
			if got["ttlMs"] != float64(300) {
				t.Errorf("ttlMs = %v, want 300", got["ttlMs"])
			}
			for deadline := time.Now().Add(await.Timeout); ; time.Sleep(10 * time.Millisecond) {
				_, rerr := e.get(ada, id)
				if rerr != nil {
					if rerr.Code != -32602 || rerr.Message != "Failed to retrieve task: Task not found" {
						t.Errorf("an expired task: %+v", rerr)
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("the task outlived its TTL by 10s")
				}
			}
		})
	}
}
