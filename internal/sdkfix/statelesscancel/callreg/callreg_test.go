package callreg

import (
	"slices"
	"sync"
	"testing"
)

type req struct{ name string }

// found is the names of the requests under k, sorted, and whether Each
// reported any.
func found(c *Registry[string, *req], k Key[string]) ([]string, bool) {
	var names []string
	ok := c.Each(k, func(r *req) { names = append(names, r.name) })
	slices.Sort(names)
	return names, ok
}

// TestRegistry: a request is found under its caller and each of its ids,
// not under another caller's; requests sharing a key are all found,
// whichever leaves first; a key with none left is gone.
func TestRegistry(t *testing.T) {
	c := New[string, *req]()
	a, b, d := &req{"a"}, &req{"b"}, &req{"d"}
	c.Add("alice", []string{"n1", "s1"}, a)
	c.Add("alice", []string{"n1"}, b)
	c.Add("alice", []string{"n1"}, d)
	check := func(user, id string, want ...string) {
		t.Helper()
		got, ok := found(c, Key[string]{user, id})
		if ok != (len(want) > 0) || !slices.Equal(got, want) {
			t.Errorf("%s %s: found %q (%v), want %q", user, id, got, ok, want)
		}
	}
	check("alice", "n1", "a", "b", "d")
	check("alice", "s1", "a")
	check("bob", "n1")
	check("alice", "n2")

	c.Remove("alice", []string{"n1", "s1"}, a) // the first leaves
	check("alice", "n1", "b", "d")
	check("alice", "s1")
	c.Add("alice", []string{"n1"}, a) // and comes back
	check("alice", "n1", "a", "b", "d")
	c.Remove("alice", []string{"n1"}, b)
	c.Remove("alice", []string{"n1"}, a)
	check("alice", "n1", "d")
	c.Remove("alice", []string{"n1"}, d)
	c.Remove("alice", []string{"n1"}, d) // twice: nothing to do
	check("alice", "n1")
	if len(c.m) != 0 {
		t.Errorf("%d keys left after every request left", len(c.m))
	}
}

// TestRegistryConcurrent: adds, removes and lookups from many goroutines
// leave the registry empty (run with -race).
func TestRegistryConcurrent(t *testing.T) {
	c := New[string, *req]()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			r := &req{string(rune('a' + i))}
			for range 200 {
				c.Add("alice", []string{"1", "2"}, r)
				c.Each(Key[string]{"alice", "1"}, func(*req) {})
				c.Remove("alice", []string{"1", "2"}, r)
			}
		})
	}
	wg.Wait()
	if len(c.m) != 0 {
		t.Errorf("%d keys left", len(c.m))
	}
}
