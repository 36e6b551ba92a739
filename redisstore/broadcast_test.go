package redisstore_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolroute/toolroute/internal/testing/redistest"
	"github.com/toolroute/toolroute/redisstore"
)

// TestBroadcast: a message one of three replicas publishes reaches the
// other two, not itself; malformed, oversized and other channels'
// messages are dropped; Close ends the subscription.
func TestBroadcast(t *testing.T) {
	srv := redistest.Start(t)
	rdb := client(t, srv)
	opts := redisstore.Options{Prefix: "svc:"}
	var bs []*redisstore.Broadcast
	inboxes := make([]inbox, 3)
	for i := range 3 {
		b := redisstore.NewBroadcast(client(t, srv), "reload", "policy reloads", opts)
		t.Cleanup(func() { b.Close() })
		b.Subscribe(func(p json.RawMessage) { inboxes[i].deliver("from", p) })
		bs = append(bs, b)
	}
	other := redisstore.NewBroadcast(client(t, srv), "other", "other news", opts)
	t.Cleanup(func() { other.Close() })
	var atOther inbox
	other.Subscribe(func(p json.RawMessage) { atOther.deliver("from", p) })
	waitSubscribers(t, rdb, "svc:reload", 3)
	waitSubscribers(t, rdb, "svc:other", 1)

	ctx := context.Background()
	if err := bs[0].Publish(ctx, json.RawMessage(`{"policy":"abc"}`)); err != nil {
		t.Fatal(err)
	}
	if err := bs[0].Publish(ctx, json.RawMessage(`not json`)); err == nil {
		t.Error("Publish of a payload that is not JSON succeeded")
	}
	if err := bs[0].Publish(ctx, json.RawMessage(`"`+strings.Repeat("x", redisstore.MaxBroadcastBytes)+`"`)); err == nil {
		t.Error("a message larger than MaxBroadcastBytes was published")
	}
	for _, raw := range []string{`not json`, `{"o":"x"}`, `{"o":"x","p":"` + strings.Repeat("x", redisstore.MaxBroadcastBytes) + `"}`} {
		if err := rdb.Publish(ctx, "svc:reload", raw).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := bs[1].Publish(ctx, json.RawMessage(`2`)); err != nil {
		t.Fatal(err)
	}
	// In order, after the dropped ones: the second message arriving at
	// each replica proves the malformed ones in between were dropped.
	waitGot(t, &inboxes[0], `from 2`)
	waitGot(t, &inboxes[1], `from {"policy":"abc"}`)
	waitGot(t, &inboxes[2], `from {"policy":"abc"}`, `from 2`)
	waitGot(t, &atOther)

	bs[2].Close()
	waitSubscribers(t, rdb, "svc:reload", 2)
}
