//go:build !unix

package benchtools

import "time"

// CPUTime returns 0: the process's CPU time is read on unix only.
func CPUTime() time.Duration { return 0 }
