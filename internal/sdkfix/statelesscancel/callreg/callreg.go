package callreg

import "sync"

// Key is a call in flight: its caller and its JSON-RPC id (a key made
// by rpcscan.IDKey, which keeps a string id and a number id apart).
type Key[U comparable] struct {
	User U
	ID   string
}

// set is the requests in flight under one key: nearly always one
// (first), without a map of its own.
type set[R comparable] struct {
	first R
	more  map[R]struct{}
}

// Registry is the requests in flight (of type R, typically a pointer),
// by caller (of type U) and call id. Several requests may share a key
// (two clients of one caller count ids alike): a cancellation finds them
// all, as the caller's. The zero value is not usable: make one with
// [New]. Its methods may be called concurrently.
type Registry[U, R comparable] struct {
	mu sync.Mutex
	m  map[Key[U]]set[R]
}

// New returns an empty registry.
func New[U, R comparable]() *Registry[U, R] {
	return &Registry[U, R]{m: map[Key[U]]set[R]{}}
}

// Add records r in flight under user and each of ids. r must not be the
// zero R.
func (c *Registry[U, R]) Add(user U, ids []string, r R) {
	var none R
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		k := Key[U]{user, id}
		s := c.m[k]
		switch {
		case s.first == none:
			s.first = r
		case s.more == nil:
			s.more = map[R]struct{}{r: {}}
		default:
			s.more[r] = struct{}{}
		}
		c.m[k] = s
	}
}

// Remove forgets r under user and each of ids (as [Registry.Add] recorded
// it).
func (c *Registry[U, R]) Remove(user U, ids []string, r R) {
	var none R
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range ids {
		k := Key[U]{user, id}
		s, ok := c.m[k]
		if !ok {
			continue
		}
		if s.first == r {
			s.first = none
		} else {
			delete(s.more, r)
		}
		if s.first == none && len(s.more) == 0 {
			delete(c.m, k)
		} else {
			c.m[k] = s
		}
	}
}

// Each calls f with every request in flight under k, holding the
// registry's lock (f must not call the registry), and reports whether
// there were any.
func (c *Registry[U, R]) Each(k Key[U], f func(R)) bool {
	var none R
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.m[k]
	if s.first != none {
		f(s.first)
	}
	for r := range s.more {
		f(r)
	}
	return ok
}
