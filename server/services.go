package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"
)

// Service is an upstream service the tools call, identified by the
// ServiceKey tools declare. Every key a registered tool needs must have
// exactly one Service; its Warm (optional) runs on start, to open
// connections, fetch discovery documents or check the service is there.
type Service struct {
	// Key is the service key, as in tool.Tool.ServiceKey.
	Key string
	// Warm prepares the service. nil means nothing to warm. It must
	// respect ctx's deadline.
	Warm func(ctx context.Context) error
}

// checkServices indexes services by key, refusing empty and duplicate
// keys.
func checkServices(list []Service) (map[string]Service, error) {
	m := make(map[string]Service, len(list))
	var errs []error
	for _, s := range slices.SortedFunc(slices.Values(list), func(a, b Service) int { return cmp.Compare(a.Key, b.Key) }) {
		switch _, dup := m[s.Key]; {
		case s.Key == "":
			errs = append(errs, errors.New("server: a server.Service has an empty Key"))
		case dup:
			errs = append(errs, fmt.Errorf("server: two server.Services have the key %q", s.Key))
		}
		m[s.Key] = s
	}
	return m, errors.Join(errs...)
}

// warm warms every service concurrently within timeout, and reports every
// failure, sorted by key. A Warm that panics fails too.
func warm(ctx context.Context, timeout time.Duration, services map[string]Service) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range services {
			if !yield(k) {
				return
			}
		}
	})
	errs := make([]error, len(keys))
	var wg sync.WaitGroup
	for i, k := range keys {
		if services[k].Warm == nil {
			continue
		}
		wg.Go(func() {
			// A panic here, in a goroutine of its own, would end the
			// process: it fails the start instead.
			defer func() {
				if p := recover(); p != nil {
					errs[i] = fmt.Errorf("server: warming service %q panicked: %v", k, p)
				}
			}()
			if err := services[k].Warm(ctx); err != nil {
				errs[i] = fmt.Errorf("server: warming service %q: %w", k, err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
