package resultcache

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// memory is the in-process [Store]: at most maxEntries entries of at
// most maxBytes (keys and values) together, the least recently used
// dropped first (counted by onEvict), expired ones dropped when met.
type memory struct {
	mu         sync.Mutex
	byKey      map[string]*list.Element // of *memEntry
	lru        *list.List               // front: most recently used
	bytes      int64
	maxEntries int
	maxBytes   int64
	now        func() time.Time
	onEvict    func(n int)
}

type memEntry struct {
	key     string
	value   []byte
	expires time.Time
}

func newMemory(maxEntries int, maxBytes int64, now func() time.Time, onEvict func(int)) *memory {
	return &memory{byKey: map[string]*list.Element{}, lru: list.New(), maxEntries: maxEntries, maxBytes: maxBytes, now: now, onEvict: onEvict}
}

func size(key string, value []byte) int64 { return int64(len(key) + len(value)) }

func (m *memory) Get(_ context.Context, key string) ([]byte, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el := m.byKey[key]
	if el == nil {
		return nil, false, nil
	}
	e := el.Value.(*memEntry)
	if !m.now().Before(e.expires) {
		m.remove(el)
		return nil, false, nil
	}
	m.lru.MoveToFront(el)
	return e.value, true, nil
}

func (m *memory) Set(_ context.Context, key string, value []byte, ttl time.Duration) error {
	sz := size(key, value)
	if sz > m.maxBytes {
		return nil
	}
	m.mu.Lock()
	if el := m.byKey[key]; el != nil {
		m.remove(el)
	}
	e := &memEntry{key: key, value: value, expires: m.now().Add(ttl)}
	m.byKey[key] = m.lru.PushFront(e)
	m.bytes += sz
	evicted := 0
	for len(m.byKey) > m.maxEntries || m.bytes > m.maxBytes {
		m.remove(m.lru.Back())
		evicted++
	}
	m.mu.Unlock()
	if evicted > 0 {
		m.onEvict(evicted)
	}
	return nil
}

// remove drops el; m.mu must be held.
func (m *memory) remove(el *list.Element) {
	e := el.Value.(*memEntry)
	m.lru.Remove(el)
	delete(m.byKey, e.key)
	m.bytes -= size(e.key, e.value)
}
