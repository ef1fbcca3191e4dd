//go:build unix

package benchbase

import (
	"syscall"
	"time"
)

// ProcessCPU is the CPU time this process has used so far, user and
// system: a benchmark divides its growth over a phase by the phase's wall
// time to tell a phase that waits from one the cores cannot keep up with,
// and the comparison meters the systems it runs in this process with it.
func ProcessCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
