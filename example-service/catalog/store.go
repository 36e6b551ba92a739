package catalog

import (
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sync"
)

// Item is one catalog item.
type Item struct {
	ID       string `json:"id" jsonschema:"description=the item's id"`
	Name     string `json:"name" jsonschema:"description=the item's name"`
	Quantity int    `json:"quantity" jsonschema:"description=how many are in stock"`
}

// Store is an in-memory, concurrency-safe item store. The zero Store is
// empty and ready to use.
type Store struct {
	mu    sync.RWMutex
	items map[string]Item
}

// NewStore returns a store holding items (later duplicates of an id
// replace earlier ones).
func NewStore(items ...Item) *Store {
	s := &Store{items: make(map[string]Item, len(items))}
	for _, it := range items {
		s.items[it.ID] = it
	}
	return s
}

// DemoItems returns the items example-service's embedded catalog starts
// with.
func DemoItems() []Item {
	return []Item{
		{ID: "itm-1", Name: "Espresso beans, 1 kg", Quantity: 12},
		{ID: "itm-2", Name: "Milk jug", Quantity: 4},
		{ID: "itm-3", Name: "Paper filters (100)", Quantity: 0},
	}
}

// List returns every item, sorted by id.
func (s *Store) List() []Item {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		out = append(out, it)
	}
	slices.SortFunc(out, func(a, b Item) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Get returns the item with id.
func (s *Store) Get(id string) (Item, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	it, ok := s.items[id]
	return it, ok
}

// Create stores a new item under a fresh random id and returns it.
func (s *Store) Create(name string, quantity int) Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.items == nil {
		s.items = map[string]Item{}
	}
	for {
		it := Item{ID: newID(), Name: name, Quantity: quantity}
		if _, taken := s.items[it.ID]; !taken {
			s.items[it.ID] = it
			return it
		}
	}
}

// Update replaces the name and quantity of the item with id, and reports
// whether it exists.
func (s *Store) Update(id, name string, quantity int) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[id]; !ok {
		return Item{}, false
	}
	it := Item{ID: id, Name: name, Quantity: quantity}
	s.items[id] = it
	return it, true
}

// Delete removes the item with id and reports whether it existed.
func (s *Store) Delete(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.items[id]
	delete(s.items, id)
	return ok
}

func newID() string {
	var b [6]byte
	rand.Read(b[:]) // never fails (crypto/rand, Go 1.24+)
	return "itm-" + hex.EncodeToString(b[:])
}
