package tasks_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/redisstore"
	"github.com/toolroute/toolroute/server/tasks"
)

// redisClient returns a client of addr with short timeouts and no
// retries, so that an outage shows at once.
func redisClient(t testing.TB, addr string) *redis.Client {
	t.Helper()
	rdb := redis.NewClient(&redis.Options{
		Addr: addr, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 500 * time.Millisecond, WriteTimeout: 500 * time.Millisecond,
		MaxRetries: -1,
	})
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// TestStores: the Memory store and redisstore's keep the Store contract:
// Create refuses a taken id, Get finds what Create stored and nothing
// else, Update is atomic under concurrent writers and stores nothing
// when its change fails, and an expired task is gone.
func TestStores(t *testing.T) {
	stores := map[string]func(t *testing.T) tasks.Store{
		"memory": func(*testing.T) tasks.Store { return &tasks.Memory{} },
		"redis": func(t *testing.T) tasks.Store {
			srv := redistest.Start(t)
			return redisstore.NewTaskStore(redisClient(t, srv.Addr), redisstore.Options{Prefix: "svc:"})
		},
	}
	for name, mk := range stores {
		t.Run(name, func(t *testing.T) {
			s := mk(t)
			ctx := context.Background()
			now := time.Now().Truncate(time.Millisecond)
			rec := &tasks.Record{ID: "T1", Subject: "ada", Status: tasks.Working, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
			if err := s.Create(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if err := s.Create(ctx, rec); err == nil {
				t.Error("a second Create of one id succeeded")
			}
			if _, err := s.Get(ctx, "T2"); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("Get of an unknown id = %v, want ErrNotFound", err)
			}
			if _, err := s.Update(ctx, "T2", func(*tasks.Record) error { return nil }); !errors.Is(err, tasks.ErrNotFound) {
				t.Errorf("Update of an unknown id = %v, want ErrNotFound", err)
			}
			got, err := s.Get(ctx, "T1")
			if err != nil || got.Subject != "ada" || !got.CreatedAt.Equal(now) {
				t.Fatalf("Get = %+v, %v", got, err)
			}

			// 20 concurrent writers each count once: none is lost.
			var wg sync.WaitGroup
			for range 20 {
				wg.Go(func() {
					if _, err := s.Update(ctx, "T1", func(r *tasks.Record) error {
						r.StatusMessage += "x"
						return nil
					}); err != nil {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			boom := errors.New("boom")
			if _, err := s.Update(ctx, "T1", func(r *tasks.Record) error {
				r.Status = tasks.Failed
				return boom
			}); !errors.Is(err, boom) {
				t.Errorf("Update's change error = %v, want it returned", err)
			}
			got, _ = s.Get(ctx, "T1")
			if len(got.StatusMessage) != 20 || got.Status != tasks.Working {
				t.Errorf("after the writers: %d updates, status %s; want 20, working", len(got.StatusMessage), got.Status)
			}

			// Expiry: a task past its ExpiresAt is gone.
			past := &tasks.Record{ID: "T3", CreatedAt: now.Add(-time.Hour), ExpiresAt: time.Now().Add(50 * time.Millisecond)}
			if err := s.Create(ctx, past); err != nil {
				t.Fatal(err)
			}
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				if _, err := s.Get(ctx, "T3"); errors.Is(err, tasks.ErrNotFound) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("an expired task is still there after 10s")
				}
			}
		})
	}
}
