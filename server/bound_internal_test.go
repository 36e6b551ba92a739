package server

import (
	"testing"
	"time"
)

// TestBound: toolroute's one rule for a bound's option: 0 selects the
// default, a negative value turns the bound off, a positive one is the
// bound; HTTPOptions reads its bounds through it.
func TestBound(t *testing.T) {
	for _, c := range []struct{ v, want time.Duration }{{0, time.Minute}, {-1, 0}, {-time.Hour, 0}, {time.Second, time.Second}} {
		if got := bound(c.v, time.Minute); got != c.want {
			t.Errorf("bound(%v, 1m) = %v, want %v", c.v, got, c.want)
		}
	}
	o := HTTPOptions{BodyTimeout: -1, MaxRequestBodyBytes: -1}
	if o.bodyTimeout() != 0 || o.maxBody() != 0 {
		t.Errorf("negative BodyTimeout and MaxRequestBodyBytes read as %v and %d, want none (0)", o.bodyTimeout(), o.maxBody())
	}
	o = HTTPOptions{}
	if o.bodyTimeout() != defaultBodyTimeout {
		t.Errorf("zero BodyTimeout reads as %v, want the default %v", o.bodyTimeout(), defaultBodyTimeout)
	}
}
