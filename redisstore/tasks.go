package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/toolroute/toolroute/server/tasks"
)

// TaskStore is a tasks.Store on Redis: the tasks of every replica using
// the same Redis and prefix, so that a task created on one is polled,
// answered and cancelled on any. Each task is one key holding its
// tasks.Record as JSON, expiring at the record's ExpiresAt (PXAT, by
// Redis's clock): Redis forgets an expired task by itself. It must be
// created with [NewTaskStore].
type TaskStore struct {
	rdb    redis.UniversalClient
	prefix string
}

// NewTaskStore returns a TaskStore on rdb. It panics if rdb is nil.
func NewTaskStore(rdb redis.UniversalClient, opts Options) *TaskStore {
	if rdb == nil {
		panic("redisstore: NewTaskStore: nil client")
	}
	return &TaskStore{rdb: rdb, prefix: opts.prefix() + "task:"}
}

// maxTaskConflicts bounds Update's retries of a transaction another
// writer of the same task aborted.
const maxTaskConflicts = 16

// Create implements tasks.Store with SET NX PXAT: once it returns, a GET
// on any client of this Redis finds the task.
func (s *TaskStore) Create(ctx context.Context, rec *tasks.Record) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("redisstore: encoding a task: %w", err)
	}
	err = s.rdb.Do(ctx, "SET", s.prefix+rec.ID, b, "NX", "PXAT", rec.ExpiresAt.UnixMilli()).Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, redis.Nil):
		return errors.New("redisstore: task id taken")
	default:
		return fmt.Errorf("redisstore: creating a task: %w", err)
	}
}

// Get implements tasks.Store.
func (s *TaskStore) Get(ctx context.Context, id string) (*tasks.Record, error) {
	b, err := s.rdb.Get(ctx, s.prefix+id).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		return nil, tasks.ErrNotFound
	case err != nil:
		return nil, fmt.Errorf("redisstore: reading a task: %w", err)
	}
	return decodeTask(b)
}

func decodeTask(b []byte) (*tasks.Record, error) {
	var r tasks.Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("redisstore: decoding a task: %w", err)
	}
	return &r, nil
}

// Update implements tasks.Store with an optimistic transaction (WATCH,
// GET, MULTI, SET KEEPTTL, EXEC), retried when another writer changed
// the task meanwhile.
func (s *TaskStore) Update(ctx context.Context, id string, change func(*tasks.Record) error) (*tasks.Record, error) {
	key := s.prefix + id
	var out *tasks.Record
	txf := func(tx *redis.Tx) error {
		b, err := tx.Get(ctx, key).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
			return tasks.ErrNotFound
		case err != nil:
			return fmt.Errorf("redisstore: reading a task: %w", err)
		}
		r, err := decodeTask(b)
		if err != nil {
			return err
		}
		if err := change(r); err != nil {
			return err
		}
		nb, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("redisstore: encoding a task: %w", err)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.SetArgs(ctx, key, nb, redis.SetArgs{KeepTTL: true})
			return nil
		})
		out = r
		return err
	}
	for range maxTaskConflicts {
		err := s.rdb.Watch(ctx, txf, key)
		if !errors.Is(err, redis.TxFailedErr) {
			if err != nil {
				return nil, err
			}
			return out, nil
		}
	}
	return nil, fmt.Errorf("redisstore: task %s: %d conflicting writers in a row", id, maxTaskConflicts)
}
