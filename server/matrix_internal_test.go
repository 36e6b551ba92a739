package server

import (
	"testing"
	"time"
)

// TestProgressIntervalDefault: liveness reports come every 30 s unless
// Options.ProgressInterval says otherwise; a negative value disables them.
func TestProgressIntervalDefault(t *testing.T) {
	tests := []struct {
		set, want time.Duration
	}{
		{0, 30 * time.Second},
		{5 * time.Millisecond, 5 * time.Millisecond},
		{-1, 0},
	}
	for _, tt := range tests {
		if got := (&Options{ProgressInterval: tt.set}).progressInterval(); got != tt.want {
			t.Errorf("ProgressInterval %v: interval %v, want %v", tt.set, got, tt.want)
		}
	}
}
