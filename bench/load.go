package bench

import (
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/toolroute/toolroute/internal/testing/benchtools"
)

// Target is a server a load run calls: its MCP endpoint and the bearer
// its caller sends ("" for none).
type Target struct {
	Name   string
	URL    string
	Token  string
	Header http.Header // set on every request (see benchtools.Client.Header)
}

// Stats are the figures of a load run.
type Stats struct {
	Calls     int           // calls answered
	Elapsed   time.Duration // wall time of the run
	Latencies []time.Duration
}

// Add adds o's calls and time to s.
func (s *Stats) Add(o Stats) {
	s.Calls += o.Calls
	s.Elapsed += o.Elapsed
	s.Latencies = append(s.Latencies, o.Latencies...)
}

// PerSecond returns calls per second.
func (s *Stats) PerSecond() float64 {
	if s.Elapsed <= 0 {
		return 0
	}
	return float64(s.Calls) / s.Elapsed.Seconds()
}

// Quantile returns the q-quantile (0 < q < 1) of the calls' latencies.
func (s *Stats) Quantile(q float64) time.Duration {
	if len(s.Latencies) == 0 {
		return 0
	}
	ls := slices.Clone(s.Latencies)
	slices.Sort(ls)
	return ls[min(len(ls)-1, int(q*float64(len(ls))))]
}

// Load runs clients concurrent clients, each posting body to t in a
// loop, for d or until maxCalls calls in all, whichever comes first, over
// hc (whose transport should keep at least clients idle connections per
// host). A failed call ends the run with its error.
func Load(hc *http.Client, t Target, body []byte, clients int, d time.Duration, maxCalls int) (Stats, error) {
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		all      Stats
		firstErr error
		budget   = make(chan struct{}, maxCalls)
	)
	for range maxCalls {
		budget <- struct{}{}
	}
	close(budget)
	start := time.Now()
	deadline := start.Add(d)
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &benchtools.Client{HTTP: hc, Header: t.Header}
			var mine []time.Duration
			var err error
			for range budget {
				t0 := time.Now()
				if t0.After(deadline) {
					break
				}
				if _, err = c.Post(t.URL, t.Token, body); err != nil {
					break
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			all.Calls += len(mine)
			all.Latencies = append(all.Latencies, mine...)
			if err != nil && firstErr == nil {
				firstErr = err
			}
		}()
	}
	wg.Wait()
	all.Elapsed = time.Since(start)
	return all, firstErr
}

// LoadClient returns an HTTP client for Load with clients connections
// per host kept idle.
func LoadClient(clients int) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = clients * 4
	tr.MaxIdleConnsPerHost = clients
	return &http.Client{Transport: tr}
}
