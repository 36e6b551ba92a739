//go:build unix

package benchtools

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user and system) the process has used:
// unlike wall time, it does not count the time other processes of a
// shared machine take. 0 where it cannot be read.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
