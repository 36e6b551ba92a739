package catalog_test

import (
	"sync"
	"testing"

	"github.com/toolroute/toolroute/example-service/catalog"
)

func TestStoreConcurrent(t *testing.T) {
	s := catalog.NewStore()
	var wg sync.WaitGroup
	ids := make(chan string, 100)
	for range 4 {
		wg.Go(func() {
			for range 25 {
				it := s.Create("x", 1)
				s.Update(it.ID, "y", 2)
				s.List()
				ids <- it.ID
			}
		})
	}
	wg.Wait()
	close(ids)
	seen := map[string]bool{}
	for id := range ids {
		if seen[id] {
			t.Errorf("duplicate id %q", id)
		}
		seen[id] = true
		if it, ok := s.Get(id); !ok || it.Name != "y" {
			t.Errorf("Get(%q) = %+v, %v", id, it, ok)
		}
	}
	if n := len(s.List()); n != 100 {
		t.Errorf("List has %d items, want 100", n)
	}
}
